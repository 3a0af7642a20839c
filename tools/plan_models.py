#!/usr/bin/env python3
"""plan_models.py - write the example models of docs/plan.md
(docs/examples/*.model.json) from their architectures.

Times: FLOPs of one microbatch at a stated achieved throughput per GPU.
A matmul's forward is 2 x params x tokens; its input gradient (B) and
weight gradient (W) cost the same again each; causal attention's core
(QK^T and AV, 2 s h FLOPs per token over the half it sees) runs in F and
twice in B. Bytes: bf16 tensors a layer keeps (flash attention, no
recompute); B keeps 32/34 of them until W (the Zero Bubble paper's
M_W / M_B); logits kept in fp32 for the loss. Tensor or expert
parallelism is folded in: parameters, FLOPs and bytes per GPU.
Usage: python3 tools/plan_models.py docs/examples
"""
import json
import sys

KEEP_W = 32 / 34


def layer(name, kind, f, b, w, act, act_w, params, out, count=None):
    d = {"name": name}
    if count:
        d["count"] = count
    d.update({"kind": kind, "F": round(f, 4), "B": round(b, 4),
              "W": round(w, 4), "act_bytes": float(f"{act:.4g}"),
              "act_w_bytes": float(f"{act_w:.4g}"),
              "params": float(f"{params:.4g}"),
              "out_bytes": float(f"{out:.4g}")})
    return d


def ms(flops, tput):
    return flops / tput * 1e3


def dense(name, count, h, ffn, kv, s, tput, shard=1, mlp_mats=3):
    """A transformer block with GQA attention (kv = key/value width)."""
    p_att = 2 * h * h + 2 * h * kv
    p_mlp = mlp_mats * h * ffn
    params = (p_att + p_mlp + 2 * h) / shard
    f_mm = 2 * (p_att + p_mlp) * s / shard
    f_at = 2 * s * h * s / shard            # causal: half of 4 s h a token
    # Kept bf16 tensors per token: 6 of width h (norm in/out twice, the
    # attention output, Q), K and V, and 3 of width ffn (gate, up, their
    # product) for SwiGLU, 2 (fc1 out, GELU out) for a GPT MLP.
    per_tok = 2 * (6 * h + 2 * kv + mlp_mats * ffn)
    act = per_tok * s / shard
    return layer(name, "layer", ms(f_mm + f_at, tput),
                 ms(f_mm + 2 * f_at, tput), ms(f_mm, tput), act,
                 act * KEEP_W, params, 2 * s * h / shard, count)


def ends(h, vocab, s, tput, shard=1):
    emb = layer("tok_embeddings", "embedding", 0.02, 0, 0.05,
                8 * s, 8 * s, vocab * h / shard, 2 * s * h / shard)
    norm = layer("norm", "head", 0.05, 0.05, 0.01, 2 * s * h / shard,
                 2 * s * h / shard, h, 2 * s * h / shard)
    f = 2 * vocab * h * s / shard
    logits = 4 * s * vocab / shard
    out = layer("output", "head", ms(f, tput), ms(f, tput), ms(f, tput),
                2 * s * h / shard + logits, 2 * s * h / shard + logits / 2,
                vocab * h / shard, 0)
    return emb, norm, out


def model(name, layers, note):
    return {"format": "zbsched-model", "version": 1, "name": name,
            "time_unit": "ms", "layers": layers,
            "state_bytes": {"weights": 2, "grads": 4, "optimizer": 12},
            "_note": note}


def llama8b():
    h, s, t = 4096, 4096, 400e12
    e, n, o = ends(h, 128256, s, t)
    return model("llama3-8b", [e, dense("layers.{i}", 32, h, 14336, 1024,
                                         s, t), n, o],
                 "Llama 3 8B, seq 4096, 1 sequence a microbatch, "
                 "400 TFLOP/s")


def llama70b():
    h, s, t, tp = 8192, 4096, 400e12, 4
    e, n, o = ends(h, 128256, s, t, tp)
    return model("llama3-70b-tp4", [e, dense("layers.{i}", 80, h, 28672,
                                              1024, s, t, tp), n, o],
                 "Llama 3 70B, TP 4 with sequence parallelism folded in, "
                 "seq 4096, 400 TFLOP/s")


def moe():
    """DeepSeek-V3-like: MLA attention, 3 dense blocks, 58 MoE blocks
    (1 shared + 8 of 256 routed experts a token, 8 held per GPU: EP 32),
    one MTP layer, 129280 vocabulary, seq 4096, 400 TFLOP/s."""
    h, s, t, vocab = 7168, 4096, 400e12, 129280
    p_att = 7168 * 1536 + 1536 * 24576 + 7168 * 576 + 512 * 32768 \
        + 16384 * 7168
    expert = 3 * h * 2048
    att_core = (2 * s * 24576 + 2 * s * 16384) / 2     # causal half
    act_att = 2 * (4 * h + 1536 + 24576 + 576 + 32768 + 16384)
    act_moe = 2 * 2 * h + 1024 + 9 * 2 * 3 * 2048 + 8 * 2 * h

    def block(name, count, params, f_mm_tok, act_tok):
        f_mm, f_at = f_mm_tok * s, att_core * s
        act = act_tok * s
        return layer(name, "layer", ms(f_mm + f_at, t),
                     ms(f_mm + 2 * f_at, t), ms(f_mm, t), act,
                     act * KEEP_W, params, 2 * s * h, count)
    dense_ffn = 3 * h * 18432
    d = block("layers.{i}", 3, p_att + dense_ffn,
              2 * (p_att + dense_ffn), act_att + 2 * 2 * h + 3 * 2 * 18432)
    m = block("layers.{i}", 58, p_att + 9 * expert + h * 256,
              2 * (p_att + 9 * expert), act_att + act_moe)
    # Two entries of "layers.{i}" would repeat names: number the MoE ones
    # on from 3.
    m["name"] = "layers.{i}"
    e, n, o = ends(h, vocab, s, t)
    mtp_proj = 2 * h * h
    f_head = 2 * vocab * h * s
    mtp = layer("mtp", "mtp",
                m["F"] + ms(2 * mtp_proj * s + f_head, t),
                m["B"] + ms(2 * mtp_proj * s + f_head, t),
                m["W"] + ms(2 * mtp_proj * s + f_head, t),
                m["act_bytes"] + 4 * s * vocab,
                m["act_w_bytes"] + 2 * s * vocab,
                m["params"] + mtp_proj, 2 * s * h)
    layers = [e, d]
    for i in range(3, 61):
        x = dict(m)
        x.pop("count")
        x["name"] = f"layers.{i}"
        layers.append(x)
    return model("moe-61-mtp", layers + [mtp, n, o],
                 "DeepSeek-V3-like MoE, EP 32 folded in (8 routed experts "
                 "a GPU), seq 4096, 400 TFLOP/s")


def gpt_small():
    h, s, t = 768, 1024, 100e12
    e, n, o = ends(h, 50257, s, t)
    return model("gpt-small", [e, dense("layers.{i}", 12, h, 4 * h, h, s, t,
                                         mlp_mats=2), n, o],
                 "GPT-2 small (124M), seq 1024, 100 TFLOP/s")


def main():
    out = sys.argv[1]
    for fname, m in [("llama3-8b", llama8b()), ("llama3-70b-tp4", llama70b()),
                     ("moe-61-mtp", moe()), ("gpt-small", gpt_small())]:
        m.pop("_note")
        layers = m.pop("layers")
        text = json.dumps(m, indent=1)[:-2]
        text += ',\n "layers": [\n  ' + ",\n  ".join(
            json.dumps(x) for x in layers) + "\n ]\n}\n"
        with open(f"{out}/{fname}.model.json", "w") as f:
            f.write(text)


main()
