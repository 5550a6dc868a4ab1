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
RWByteAddressBuffer p0_ : register(u2);
RWByteAddressBuffer p1_ : register(u3);

uint relok_bounds(uint off, uint size, uint len, uint code, uint3 b, uint3 t)
{
    bool local_1 = (bool)0;

    if ((off <= len)) {
        local_1 = (size <= (len - off));
    } else {
        local_1 = false;
    }
    bool _e12 = local_1;
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

uint NagaBufferLength(ByteAddressBuffer buffer)
{
    uint ret;
    buffer.GetDimensions(ret);
    return ret;
}

uint NagaBufferLengthRW(RWByteAddressBuffer buffer)
{
    uint ret;
    buffer.GetDimensions(ret);
    return ret;
}

[numthreads(64, 2, 1)]
void k_saxpy(uint3 relok_tid : SV_GroupThreadID, uint3 relok_bid : SV_GroupID, uint3 relok_nblocks : SV_GroupID)
{
    bool local = (bool)0;

    uint relok_zero = asuint(relok_args.Load((((NagaBufferLength(relok_args) - 0) / 4) - 1u)*4+__dynamic_buffer_offsets0._0));
    uint v0_ = asuint(relok_args.Load(8+__dynamic_buffer_offsets0._0));
    uint _e15 = asuint(relok_args.Load(16+__dynamic_buffer_offsets0._0));
    float v1_ = asfloat(_e15);
    uint v4_ = relok_bid.x;
    uint v5_ = (relok_block_x + relok_zero);
    uint v6_ = relok_tid.x;
    uint v7_ = (v4_ * v5_);
    uint v8_ = (v7_ + v6_);
    bool v9_ = (v8_ < v0_);
    if (v9_) {
        uint t1_ = (0u + (v8_ * 4u));
        const uint _e35 = relok_bounds(t1_, 4u, (((NagaBufferLengthRW(p0_) - 0) / 4) * 4u), 4294706180u, relok_bid, relok_tid);
        uint _e40 = asuint(p0_.Load((_e35 >> 2u)*4));
        float v10_ = asfloat(_e40);
        uint t3_ = (0u + (v8_ * 4u));
        const uint _e51 = relok_bounds(t3_, 4u, (((NagaBufferLengthRW(p1_) - 0) / 4) * 4u), 4294706436u, relok_bid, relok_tid);
        uint _e56 = asuint(p1_.Load((_e51 >> 2u)*4));
        float v11_ = asfloat(_e56);
        float v12_ = asfloat((asuint((v1_ * v10_)) ^ relok_zero));
        if ((asuint(v12_) == 2147483648u)) {
            local = (asuint(v11_) == 2147483648u);
        } else {
            local = false;
        }
        bool _e75 = local;
        float v13_ = asfloat((((asuint((v12_ + v11_)) & 2147483647u) == 0u) ? (_e75 ? 2147483648u : 0u) : asuint((v12_ + v11_))));
        uint t5_ = (0u + (v8_ * 4u));
        const uint _e94 = relok_bounds(t5_, 4u, (((NagaBufferLengthRW(p1_) - 0) / 4) * 4u), 4294706452u, relok_bid, relok_tid);
        if ((_e94 != 4294967295u)) {
            p1_.Store((_e94 >> 2u)*4, asuint(asuint(v13_)));
        }
    }
    return;
}
