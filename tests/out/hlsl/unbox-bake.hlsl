struct NagaConstants {
    int first_vertex;
    int first_instance;
    uint other;
};
ConstantBuffer<NagaConstants> _NagaConstants: register(b1);

struct __dynamic_buffer_offsetsTy0 {
    uint _0;
};
ConstantBuffer<__dynamic_buffer_offsetsTy0> __dynamic_buffer_offsets0: register(b0, space0);

typedef uint ret_Constructarray4_uint_[4];
ret_Constructarray4_uint_ Constructarray4_uint_(uint arg0, uint arg1, uint arg2, uint arg3) {
    uint ret[4] = { arg0, arg1, arg2, arg3 };
    return ret;
}

static const uint relok_block_x = 64u;
static const uint relok_block_y = 2u;
static const uint relok_block_z = 1u;

ByteAddressBuffer relok_args : register(t0);
RWByteAddressBuffer p0_ : register(u2);
static uint c0_[4] = Constructarray4_uint_(3193623496u, 3739853691u, 42u, 0u);

[numthreads(64, 2, 1)]
void unbox(uint3 relok_tid : SV_GroupThreadID, uint3 relok_bid : SV_GroupID, uint3 relok_nblocks : SV_GroupID)
{
    uint _e5 = asuint(relok_args.Load(8+__dynamic_buffer_offsets0._0));
    uint _e8 = asuint(relok_args.Load(12+__dynamic_buffer_offsets0._0));
    uint2 v0_ = uint2(_e5, _e8);
    uint _e18 = c0_[0u];
    uint _e25 = c0_[1u];
    uint2 v4_ = uint2(_e18, _e25);
    uint v6_ = c0_[2u];
    bool v8_ = all((v4_ == v0_));
    uint v9_ = (v8_ ? v6_ : 0u);
    { uint dummy = 0; p0_.InterlockedExchange(0u*4, v9_, dummy); }
    return;
}
