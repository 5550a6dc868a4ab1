// language: metal3.2
#include <metal_stdlib>
#include <simd/simd.h>

using metal::uint;

struct _mslBufferSizes {
    uint size1;
    uint size2;
    uint size3;
};

struct type_2 {
    metal::atomic_uint inner[20];
};
typedef uint type_3[1];
constant uint relok_block_x = 64u;
constant uint relok_block_y = 2u;
constant uint relok_block_z = 1u;

uint relok_bounds(
    uint off,
    uint size,
    uint len,
    uint code,
    metal::uint3 b,
    metal::uint3 t,
    device type_2& relok_exception
) {
    bool local_1 = {};
    if (off <= len) {
        local_1 = size <= (len - off);
    } else {
        local_1 = false;
    }
    bool _e12 = local_1;
    if (_e12) {
        return off;
    }
    uint _e16 = metal::atomic_fetch_max_explicit(&relok_exception.inner[0], 1u, metal::memory_order_relaxed);
    if (_e16 == 0u) {
        metal::atomic_store_explicit(&relok_exception.inner[2], off, metal::memory_order_relaxed);
        metal::atomic_store_explicit(&relok_exception.inner[3], code, metal::memory_order_relaxed);
        metal::atomic_store_explicit(&relok_exception.inner[4], b.x, metal::memory_order_relaxed);
        metal::atomic_store_explicit(&relok_exception.inner[10], t.x, metal::memory_order_relaxed);
        metal::atomic_store_explicit(&relok_exception.inner[6], b.y, metal::memory_order_relaxed);
        metal::atomic_store_explicit(&relok_exception.inner[12], t.y, metal::memory_order_relaxed);
        metal::atomic_store_explicit(&relok_exception.inner[8], b.z, metal::memory_order_relaxed);
        metal::atomic_store_explicit(&relok_exception.inner[14], t.z, metal::memory_order_relaxed);
    }
    return 4294967295u;
}

struct k_saxpyInput {
};
[[max_total_threads_per_threadgroup(128)]] kernel void k_saxpy(
  metal::uint3 relok_tid [[thread_position_in_threadgroup]]
, metal::uint3 relok_bid [[threadgroup_position_in_grid]]
, metal::uint3 relok_nblocks [[threadgroups_per_grid]]
, device type_2& relok_exception [[buffer(0)]]
, device type_3 const& relok_args [[buffer(1)]]
, device type_3 const& p0_ [[buffer(4)]]
, device type_3& p1_ [[buffer(5)]]
, constant _mslBufferSizes& _buffer_sizes [[buffer(6)]]
) {
    bool local = {};
    uint relok_zero = relok_args[metal::min(unsigned((1 + (_buffer_sizes.size1 - 0 - 4) / 4) - 1u), (_buffer_sizes.size1 - 0 - 4) / 4)];
    uint v0_ = relok_args[metal::min(unsigned(2), (_buffer_sizes.size1 - 0 - 4) / 4)];
    uint _e15 = relok_args[metal::min(unsigned(4), (_buffer_sizes.size1 - 0 - 4) / 4)];
    float v1_ = as_type<float>(_e15);
    uint v4_ = relok_bid.x;
    uint v5_ = relok_block_x + relok_zero;
    uint v6_ = relok_tid.x;
    uint v7_ = v4_ * v5_;
    uint v8_ = v7_ + v6_;
    bool v9_ = v8_ < v0_;
    if (v9_) {
        uint t1_ = 0u + (v8_ * 4u);
        uint _e35 = relok_bounds(t1_, 4u, (1 + (_buffer_sizes.size2 - 0 - 4) / 4) * 4u, 4294706180u, relok_bid, relok_tid, relok_exception);
        uint _e40 = p0_[metal::min(unsigned(_e35 >> 2u), (_buffer_sizes.size2 - 0 - 4) / 4)];
        float v10_ = as_type<float>(_e40);
        uint t3_ = 0u + (v8_ * 4u);
        uint _e51 = relok_bounds(t3_, 4u, (1 + (_buffer_sizes.size3 - 0 - 4) / 4) * 4u, 4294706436u, relok_bid, relok_tid, relok_exception);
        uint _e56 = p1_[metal::min(unsigned(_e51 >> 2u), (_buffer_sizes.size3 - 0 - 4) / 4)];
        float v11_ = as_type<float>(_e56);
        float v12_ = as_type<float>(as_type<uint>(v1_ * v10_) ^ relok_zero);
        if (as_type<uint>(v12_) == 2147483648u) {
            local = as_type<uint>(v11_) == 2147483648u;
        } else {
            local = false;
        }
        bool _e75 = local;
        float v13_ = as_type<float>(((as_type<uint>(v12_ + v11_) & 2147483647u) == 0u) ? (_e75 ? 2147483648u : 0u) : as_type<uint>(v12_ + v11_));
        uint t5_ = 0u + (v8_ * 4u);
        uint _e94 = relok_bounds(t5_, 4u, (1 + (_buffer_sizes.size3 - 0 - 4) / 4) * 4u, 4294706452u, relok_bid, relok_tid, relok_exception);
        if (_e94 != 4294967295u) {
            p1_[metal::min(unsigned(_e94 >> 2u), (_buffer_sizes.size3 - 0 - 4) / 4)] = as_type<uint>(v13_);
        }
    }
    return;
}
