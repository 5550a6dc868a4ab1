// language: metal3.2
#include <metal_stdlib>
#include <simd/simd.h>

using metal::uint;

struct _mslBufferSizes {
    uint size0;
    uint size1;
};

typedef uint type_2[1];
typedef metal::atomic_uint type_4[1];
struct type_5 {
    uint inner[4];
};
constant uint relok_block_x = 64u;
constant uint relok_block_y = 2u;
constant uint relok_block_z = 1u;

struct unboxInput {
};
[[max_total_threads_per_threadgroup(128)]] kernel void unbox(
  metal::uint3 relok_tid [[thread_position_in_threadgroup]]
, metal::uint3 relok_bid [[threadgroup_position_in_grid]]
, metal::uint3 relok_nblocks [[threadgroups_per_grid]]
, device type_2 const& relok_args [[buffer(1)]]
, device type_4& p0_ [[buffer(4)]]
, constant _mslBufferSizes& _buffer_sizes [[buffer(5)]]
) {
    type_5 c0_ = type_5 {{3193623496u, 3739853691u, 42u, 0u}};
    uint _e5 = relok_args[metal::min(unsigned(2), (_buffer_sizes.size0 - 0 - 4) / 4)];
    uint _e8 = relok_args[metal::min(unsigned(3), (_buffer_sizes.size0 - 0 - 4) / 4)];
    metal::uint2 v0_ = metal::uint2(_e5, _e8);
    uint _e18 = c0_.inner[0u];
    uint _e25 = c0_.inner[1u];
    metal::uint2 v4_ = metal::uint2(_e18, _e25);
    uint v6_ = c0_.inner[2u];
    bool v8_ = metal::all(v4_ == v0_);
    uint v9_ = v8_ ? v6_ : 0u;
    metal::atomic_store_explicit(&p0_[metal::min(unsigned(0u), (_buffer_sizes.size1 - 0 - 4) / 4)], v9_, metal::memory_order_relaxed);
    return;
}
