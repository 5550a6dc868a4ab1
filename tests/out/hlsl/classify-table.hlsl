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

static const uint relok_block_x = 64u;
static const uint relok_block_y = 2u;
static const uint relok_block_z = 1u;

ByteAddressBuffer relok_args : register(t0);
ByteAddressBuffer relok_table : register(t1);
RWByteAddressBuffer p0_ : register(u2);

[numthreads(64, 2, 1)]
void classify(uint3 relok_tid : SV_GroupThreadID, uint3 relok_bid : SV_GroupID, uint3 relok_nblocks : SV_GroupID)
{
    uint _e5 = asuint(relok_args.Load(8+__dynamic_buffer_offsets0._0));
    uint _e8 = asuint(relok_args.Load(12+__dynamic_buffer_offsets0._0));
    uint2 v0_ = uint2(_e5, _e8);
    uint2 v4_ = asuint(relok_table.Load2(1u*8));
    uint2 v7_ = asuint(relok_table.Load2(0u*8));
    bool v11_ = all((v0_ == v4_));
    bool v12_ = all((v0_ == v7_));
    int v13_ = (v12_ ? int(2) : int(-1));
    int v14_ = (v11_ ? int(1) : v13_);
    { uint dummy = 0; p0_.InterlockedExchange(0u*4, asuint(v14_), dummy); }
    return;
}
