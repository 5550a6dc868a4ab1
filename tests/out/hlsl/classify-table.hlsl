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

RWByteAddressBuffer relok_exception : register(u0);
ByteAddressBuffer relok_args : register(t0);
ByteAddressBuffer relok_table : register(t1);
RWByteAddressBuffer p0_ : register(u2);

uint relok_bounds(uint off, uint size, uint len, uint code, uint3 b, uint3 t)
{
    bool local = (bool)0;

    if ((off <= len)) {
        local = (size <= (len - off));
    } else {
        local = false;
    }
    bool _e12 = local;
    if (_e12) {
        return off;
    }
    uint _e16; relok_exception.InterlockedMax(0, 1u, _e16);
    if ((_e16 == 0u)) {
        { uint dummy = 0; relok_exception.InterlockedExchange(8, off, dummy); }
        { uint dummy_1 = 0; relok_exception.InterlockedExchange(12, code, dummy_1); }
        { uint dummy_2 = 0; relok_exception.InterlockedExchange(16, b.x, dummy_2); }
        { uint dummy_3 = 0; relok_exception.InterlockedExchange(40, t.x, dummy_3); }
        { uint dummy_4 = 0; relok_exception.InterlockedExchange(24, b.y, dummy_4); }
        { uint dummy_5 = 0; relok_exception.InterlockedExchange(48, t.y, dummy_5); }
        { uint dummy_6 = 0; relok_exception.InterlockedExchange(32, b.z, dummy_6); }
        { uint dummy_7 = 0; relok_exception.InterlockedExchange(56, t.z, dummy_7); }
    }
    return 4294967295u;
}

uint NagaBufferLengthRW(RWByteAddressBuffer buffer)
{
    uint ret;
    buffer.GetDimensions(ret);
    return ret;
}

[numthreads(64, 2, 1)]
void k_classify(uint3 relok_tid : SV_GroupThreadID, uint3 relok_bid : SV_GroupID, uint3 relok_nblocks : SV_GroupID)
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
    const uint _e44 = relok_bounds(0u, 4u, (((NagaBufferLengthRW(p0_) - 0) / 4) * 4u), 4294706196u, relok_bid, relok_tid);
    if ((_e44 != 4294967295u)) {
        p0_.Store((_e44 >> 2u)*4, asuint(asuint(v14_)));
    }
    return;
}
