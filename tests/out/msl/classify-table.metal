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
typedef metal::uint2 type_5[1];
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
    bool local = {};
    if (off <= len) {
        local = size <= (len - off);
    } else {
        local = false;
    }
    bool _e12 = local;
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

struct k_classifyInput {
};
[[max_total_threads_per_threadgroup(128)]] kernel void k_classify(
  metal::uint3 relok_tid [[thread_position_in_threadgroup]]
, metal::uint3 relok_bid [[threadgroup_position_in_grid]]
, metal::uint3 relok_nblocks [[threadgroups_per_grid]]
, device type_2& relok_exception [[buffer(0)]]
, device type_3 const& relok_args [[buffer(1)]]
, device type_5 const& relok_table [[buffer(2)]]
, device type_3& p0_ [[buffer(4)]]
, constant _mslBufferSizes& _buffer_sizes [[buffer(5)]]
) {
    uint _e5 = relok_args[metal::min(unsigned(2), (_buffer_sizes.size1 - 0 - 4) / 4)];
    uint _e8 = relok_args[metal::min(unsigned(3), (_buffer_sizes.size1 - 0 - 4) / 4)];
    metal::uint2 v0_ = metal::uint2(_e5, _e8);
    metal::uint2 v4_ = relok_table[metal::min(unsigned(1u), (_buffer_sizes.size2 - 0 - 8) / 8)];
    metal::uint2 v7_ = relok_table[metal::min(unsigned(0u), (_buffer_sizes.size2 - 0 - 8) / 8)];
    bool v11_ = metal::all(v0_ == v4_);
    bool v12_ = metal::all(v0_ == v7_);
    int v13_ = v12_ ? 2 : -1;
    int v14_ = v11_ ? 1 : v13_;
    uint _e44 = relok_bounds(0u, 4u, (1 + (_buffer_sizes.size3 - 0 - 4) / 4) * 4u, 4294706196u, relok_bid, relok_tid, relok_exception);
    if (_e44 != 4294967295u) {
        p0_[metal::min(unsigned(_e44 >> 2u), (_buffer_sizes.size3 - 0 - 4) / 4)] = as_type<uint>(v14_);
    }
    return;
}
