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
typedef metal::uint2 type_4[1];
typedef metal::atomic_uint type_5[1];
constant uint relok_block_x = 64u;
constant uint relok_block_y = 2u;
constant uint relok_block_z = 1u;

struct classifyInput {
};
[[max_total_threads_per_threadgroup(128)]] kernel void classify(
  metal::uint3 relok_tid [[thread_position_in_threadgroup]]
, metal::uint3 relok_bid [[threadgroup_position_in_grid]]
, metal::uint3 relok_nblocks [[threadgroups_per_grid]]
, device type_2 const& relok_args [[buffer(1)]]
, device type_4 const& relok_table [[buffer(2)]]
, device type_5& p0_ [[buffer(4)]]
, constant _mslBufferSizes& _buffer_sizes [[buffer(5)]]
) {
    uint _e5 = relok_args[metal::min(unsigned(2), (_buffer_sizes.size0 - 0 - 4) / 4)];
    uint _e8 = relok_args[metal::min(unsigned(3), (_buffer_sizes.size0 - 0 - 4) / 4)];
    metal::uint2 v0_ = metal::uint2(_e5, _e8);
    metal::uint2 v4_ = relok_table[metal::min(unsigned(1u), (_buffer_sizes.size1 - 0 - 8) / 8)];
    metal::uint2 v7_ = relok_table[metal::min(unsigned(0u), (_buffer_sizes.size1 - 0 - 8) / 8)];
    bool v11_ = metal::all(v0_ == v4_);
    bool v12_ = metal::all(v0_ == v7_);
    int v13_ = v12_ ? 2 : -1;
    int v14_ = v11_ ? 1 : v13_;
    metal::atomic_store_explicit(&p0_[metal::min(unsigned(0u), (_buffer_sizes.size2 - 0 - 4) / 4)], as_type<uint>(v14_), metal::memory_order_relaxed);
    return;
}
