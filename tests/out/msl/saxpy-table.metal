// language: metal3.2
#include <metal_stdlib>
#include <simd/simd.h>

using metal::uint;

struct _mslBufferSizes {
    uint size0;
    uint size1;
    uint size2;
};

typedef uint type_2[1];
typedef metal::atomic_uint type_3[1];
constant uint relok_block_x = 64u;
constant uint relok_block_y = 2u;
constant uint relok_block_z = 1u;

struct saxpyInput {
};
[[max_total_threads_per_threadgroup(128)]] kernel void saxpy(
  metal::uint3 relok_tid [[thread_position_in_threadgroup]]
, metal::uint3 relok_bid [[threadgroup_position_in_grid]]
, metal::uint3 relok_nblocks [[threadgroups_per_grid]]
, device type_2 const& relok_args [[buffer(1)]]
, device type_3 const& p0_ [[buffer(4)]]
, device type_3& p1_ [[buffer(5)]]
, constant _mslBufferSizes& _buffer_sizes [[buffer(6)]]
) {
    uint relok_zero = relok_args[metal::min(unsigned((1 + (_buffer_sizes.size0 - 0 - 4) / 4) - 1u), (_buffer_sizes.size0 - 0 - 4) / 4)];
    uint v0_ = relok_args[metal::min(unsigned(2), (_buffer_sizes.size0 - 0 - 4) / 4)];
    uint _e15 = relok_args[metal::min(unsigned(4), (_buffer_sizes.size0 - 0 - 4) / 4)];
    float v1_ = as_type<float>(_e15);
    uint v4_ = relok_bid.x;
    uint v6_ = relok_tid.x;
    uint v7_ = v4_ * relok_block_x;
    uint v8_ = v7_ + v6_;
    bool v9_ = v8_ < v0_;
    if (v9_) {
        uint t1_ = 0u + (v8_ * 4u);
        uint _e32 = metal::atomic_load_explicit(&p0_[metal::min(unsigned(t1_ >> 2u), (_buffer_sizes.size1 - 0 - 4) / 4)], metal::memory_order_relaxed);
        float v10_ = as_type<float>(_e32);
        uint t2_ = 0u + (v8_ * 4u);
        uint _e41 = metal::atomic_load_explicit(&p1_[metal::min(unsigned(t2_ >> 2u), (_buffer_sizes.size2 - 0 - 4) / 4)], metal::memory_order_relaxed);
        float v11_ = as_type<float>(_e41);
        float v12_ = as_type<float>(as_type<uint>(v1_ * v10_) ^ relok_zero);
        float v13_ = v12_ + v11_;
        uint t3_ = 0u + (v8_ * 4u);
        metal::atomic_store_explicit(&p1_[metal::min(unsigned(t3_ >> 2u), (_buffer_sizes.size2 - 0 - 4) / 4)], as_type<uint>(v13_), metal::memory_order_relaxed);
    }
    return;
}
