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
RWByteAddressBuffer p0_ : register(u2);
RWByteAddressBuffer p1_ : register(u3);

uint NagaBufferLength(ByteAddressBuffer buffer)
{
    uint ret;
    buffer.GetDimensions(ret);
    return ret;
}

[numthreads(64, 2, 1)]
void saxpy(uint3 relok_tid : SV_GroupThreadID, uint3 relok_bid : SV_GroupID, uint3 relok_nblocks : SV_GroupID)
{
    uint relok_zero = asuint(relok_args.Load((((NagaBufferLength(relok_args) - 0) / 4) - 1u)*4+__dynamic_buffer_offsets0._0));
    uint v0_ = asuint(relok_args.Load(8+__dynamic_buffer_offsets0._0));
    uint _e15 = asuint(relok_args.Load(16+__dynamic_buffer_offsets0._0));
    float v1_ = asfloat(_e15);
    uint v4_ = relok_bid.x;
    uint v6_ = relok_tid.x;
    uint v7_ = (v4_ * relok_block_x);
    uint v8_ = (v7_ + v6_);
    bool v9_ = (v8_ < v0_);
    if (v9_) {
        uint t1_ = (0u + (v8_ * 4u));
        uint _e32; p0_.InterlockedOr((t1_ >> 2u)*4, 0, _e32);
        float v10_ = asfloat(_e32);
        uint t2_ = (0u + (v8_ * 4u));
        uint _e41; p1_.InterlockedOr((t2_ >> 2u)*4, 0, _e41);
        float v11_ = asfloat(_e41);
        float v12_ = asfloat((asuint((v1_ * v10_)) ^ relok_zero));
        float v13_ = (v12_ + v11_);
        uint t3_ = (0u + (v8_ * 4u));
        { uint dummy = 0; p1_.InterlockedExchange((t3_ >> 2u)*4, asuint(v13_), dummy); }
    }
    return;
}
