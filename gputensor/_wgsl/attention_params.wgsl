// The parameters of the attention kernels (attention_tiled.wgsl, attention_flash.wgsl,
// attention_decode.wgsl; packed by ops_attention.py), pulled in with `//#include attention_params`.
// q_blocks: blocks of query rows per (batch, head) (the decode kernel's blocks are single rows).
// (pad0 leads: the launch program patches the window words 1..4, and word 0 cannot be patched.)
struct Params {
    pad0: u32,
    q_first: u32,
    k_first: u32,
    v_first: u32,
    o_first: u32,
    n_bh: u32,
    seq_q: u32,
    seq_kv: u32,
    head_dim: u32,
    q_blocks: u32,
    splits: u32,
    split_len: u32,
    causal: u32,
    causal_shift: i32,
    scale_hi: f32,
    scale_lo: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
