#!/usr/bin/python3
"""Malformed and unsupported ONNX files for `tgc import` (and every command
that takes a .onnx): each must be refused with exit 1 and a message naming
the node or tensor at fault, never a crash, a signal or a hang.

Files are written with the onnx package (onnx.helper) from a small valid
model, then edited: fields set to invalid values, or bytes of the
serialised protobuf cut, overwritten or replaced (for what the package
refuses to write: invalid UTF-8, wrong wire types, lengths past the end).
The valid model itself is case `control` (it must import: exit 0), so that
no other case is refused for a reason shared with it; a case with no
expected substrings is likewise valid and must import.

The base model (opset 17, IR version 8):
    img_in : f32[1, 3, 8, 8]
    conv_a : Conv(img_in, conv_w[4,3,3,3], conv_b[4], pads 1) -> conv_out
    relu_a : Relu -> relu_out
    reshape_a : Reshape(relu_out, shape_c = [1, 256]) -> flat
    gemm_a : Gemm(flat, fc_w[10,256], fc_b[10], transB=1) -> logits
Other cases build a small graph of their own around one node.

Each case: (name, file bytes, expected substrings: any one must appear on
stderr, description, extra files {relative path: bytes}). The expected
substrings are the names (node, tensor, external file, or the file's own
name where nothing inside can be named), never the wording.

    /usr/bin/python3 tests/onnx/make_malformed.py --out DIR   # writes DIR/NAME.onnx and DIR/cases.json
"""

import argparse
import json
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR = 8


def f32(name, shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return numpy_helper.from_array(a, name)


def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def model(nodes, inputs, outputs, inits=(), opset=OPSET, ir=IR, domains=()):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    m = helper.make_model(g, opset_imports=ops, producer_name="tgc-tests")
    m.ir_version = ir
    return m


def base_parts():
    nodes = [
        helper.make_node("Conv", ["img_in", "conv_w", "conv_b"], ["conv_out"], name="conv_a",
                         pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["conv_out"], ["relu_out"], name="relu_a"),
        helper.make_node("Reshape", ["relu_out", "shape_c"], ["flat"], name="reshape_a"),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="gemm_a", transB=1),
    ]
    inits = [f32("conv_w", (4, 3, 3, 3), 1), f32("conv_b", (4,), 2), i64("shape_c", [1, 256]),
             f32("fc_w", (10, 256), 3), f32("fc_b", (10,), 4)]
    return nodes, [vi("img_in", [1, 3, 8, 8])], [vi("logits", [1, 10])], inits


def base(edit=None, **kw):
    nodes, ins, outs, inits = base_parts()
    if edit:
        edit(nodes, ins, outs, inits)
    return model(nodes, ins, outs, inits, **kw)


def init(inits, name):
    return next(t for t in inits if t.name == name)


def set_attr(node, attr, drop=None):
    """Sets (replaces or adds) attr on node; removes attribute `drop`."""
    keep = [a for a in node.attribute if a.name not in (attr.name, drop)]
    del node.attribute[:]
    node.attribute.extend(keep + [attr])


def one_node(node, ins, outs, inits=(), **kw):
    return model([node], ins, outs, inits, **kw)


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def replace_once(data, old, new):
    assert len(old) == len(new) and data.count(old) >= 1, old
    return data.replace(old, new)


def external(tensor, location, offset=None, length=None):
    """Marks tensor as stored externally at location (its data moved out)."""
    tensor.data_location = TensorProto.EXTERNAL
    del tensor.external_data[:]
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = tensor.external_data.add()
            e.key, e.value = k, str(v)
    raw = tensor.raw_data
    tensor.ClearField("raw_data")
    return raw


def cases():
    out = []

    def add(name, m, expect, what, files=None, expect_all=False):
        data = m if isinstance(m, bytes) else m.SerializeToString()
        out.append((name, data, list(expect), what, files or {}, expect_all))

    good = base().SerializeToString()
    add("control", good, [], "the valid base model (must import)")

    # ---- the protobuf itself ------------------------------------------------
    add("empty", b"", ["empty.onnx"], "an empty file")
    add("truncated_half", good[:len(good) // 2], ["truncated_half.onnx"], "the first half of the file")
    add("truncated_last_byte", good[:-1], ["truncated_last_byte.onnx", "fc_b", "logits"],
        "the file less its last byte")
    add("garbage", bytes(range(256)) * 4, ["garbage.onnx"], "bytes that are no protobuf")
    add("text_file", b"graph mlp(batch = 64)\ninput x : f32[batch, 784]\n", ["text_file.onnx"],
        "a .tg source named .onnx")
    add("length_past_end", varint(1 << 3 | 0) + varint(IR) + varint(7 << 3 | 2) + varint(1 << 40) + b"\0" * 16,
        ["length_past_end.onnx"], "the graph field's length runs 1 TiB past the end")
    opset_field = varint(8 << 3 | 2) + varint(2) + varint(2 << 3 | 0) + varint(OPSET)
    add("wrong_wire_type", varint(1 << 3 | 0) + varint(IR) + varint(7 << 3 | 0) + varint(5) + opset_field,
        ["wrong_wire_type.onnx"], "the graph field encoded as a varint")
    m = base()
    m.ClearField("graph")
    add("no_graph", m, ["no_graph.onnx"], "a model with no graph")

    # ---- versions -----------------------------------------------------------
    add("opset_5", base(opset=5), ["5", "relu_a", "Relu changed"],
        "default-domain opset 5: Relu (and Gemm) changed at 6 (Relu v1's consumed_inputs)", expect_all=True)
    add("opset_0", base(opset=0), ["opset 0 is not supported"], "default-domain opset 0")
    add("opset_99", base(opset=99), ["99"], "default-domain opset 99 (in the future)")
    add("ir_version_99", base(ir=99), ["99"], "IR version 99")
    # The version is an int64: one past int's range must be reported as
    # read, not as what it truncates to (2^32 + 13 would pass as 13).
    add("opset_2_62", base(opset=1 << 62), ["4611686018427387904"], "default-domain opset 2^62")
    add("opset_2_32_plus_13", base(opset=(1 << 32) + 13), ["4294967309"],
        "default-domain opset 2^32 + 13 (13 as a 32-bit int)")
    m = base()
    m.ClearField("opset_import")
    add("no_opset_import", m, ["no_opset_import.onnx", "opset"], "no opset_import at all")

    # ---- initializers -------------------------------------------------------
    def raw_short(nodes, ins, outs, inits):
        t = init(inits, "conv_w")
        t.raw_data = t.raw_data[:100]
    add("raw_data_short", base(raw_short), ["conv_w"], "conv_w's raw_data is 100 bytes, not 432")

    def raw_long(nodes, ins, outs, inits):
        t = init(inits, "fc_b")
        t.raw_data = t.raw_data + b"\0" * 4
    add("raw_data_long", base(raw_long), ["fc_b"], "fc_b's raw_data holds 11 floats for dims [10]")

    def float_data_count(nodes, ins, outs, inits):
        t = helper.make_tensor("conv_b", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
        t.dims[0] = 4
        inits[1].CopyFrom(t)
    add("float_data_count", base(float_data_count), ["conv_b"], "conv_b: 3 float_data for dims [4]")

    def undefined_type(nodes, ins, outs, inits):
        init(inits, "conv_w").data_type = TensorProto.UNDEFINED
    add("tensor_type_undefined", base(undefined_type), ["conv_w"], "conv_w's data_type is UNDEFINED")

    def string_type(nodes, ins, outs, inits):
        t = init(inits, "fc_w")
        t.data_type = TensorProto.STRING
    add("tensor_type_string", base(string_type), ["fc_w"], "fc_w's data_type is STRING")

    def bad_type_num(nodes, ins, outs, inits):
        init(inits, "conv_b").data_type = 77
    add("tensor_type_77", base(bad_type_num), ["conv_b"], "conv_b's data_type is 77 (no such type)")

    def int_weight(nodes, ins, outs, inits):
        inits[0].CopyFrom(numpy_helper.from_array(np.ones((4, 3, 3, 3), np.int64), "conv_w"))
    add("conv_weight_int64", base(int_weight), ["conv_a", "conv_w"], "Conv with an int64 weight")

    def shape_raw_odd(nodes, ins, outs, inits):
        t = init(inits, "shape_c")
        t.raw_data = t.raw_data[:-3]
    add("int64_raw_data_odd", base(shape_raw_odd), ["shape_c"], "shape_c's raw_data is 13 bytes")

    def missing_init(nodes, ins, outs, inits):
        nodes[0].input[1] = "conv_w_missing"
    add("missing_initializer", base(missing_init), ["conv_w_missing"],
        "conv_a's weight names no initializer, input or node output")

    def neg_dim_init(nodes, ins, outs, inits):
        t = init(inits, "conv_w")
        t.dims[0] = -4
    add("negative_dim_initializer", base(neg_dim_init), ["conv_w"], "conv_w's dims [-4, 3, 3, 3]")

    def huge_init(nodes, ins, outs, inits):
        t = init(inits, "fc_w")
        del t.dims[:]
        t.dims.extend([1 << 40, 1 << 40, 1 << 40])
    add("huge_dims_initializer", base(huge_init), ["fc_w"],
        "fc_w's dims [2^40, 2^40, 2^40]: the element count overflows 64 bits")

    # ---- external data ------------------------------------------------------
    def ext_missing(nodes, ins, outs, inits):
        external(init(inits, "conv_w"), "weights_missing.bin")
    add("external_missing_file", base(ext_missing), ["weights_missing.bin", "conv_w"],
        "conv_w's external data file does not exist")

    conv_w_raw = f32("conv_w", (4, 3, 3, 3), 1).raw_data

    def ext_offset(nodes, ins, outs, inits):
        external(init(inits, "conv_w"), "ext_offset.bin", offset=4096)
    add("external_offset_past_end", base(ext_offset), ["conv_w"],
        "conv_w's external data at offset 4096 of a 432-byte file",
        {"ext_offset.bin": conv_w_raw})

    def ext_length(nodes, ins, outs, inits):
        external(init(inits, "conv_w"), "ext_length.bin", offset=0, length=432)
    add("external_file_short", base(ext_length), ["conv_w"],
        "conv_w's external data file holds 200 of its 432 bytes", {"ext_length.bin": conv_w_raw[:200]})

    def ext_length_mismatch(nodes, ins, outs, inits):
        external(init(inits, "conv_w"), "ext_len2.bin", offset=0, length=400)
    add("external_length_mismatch", base(ext_length_mismatch), ["conv_w"],
        "conv_w's external length 400 is not its 432 bytes", {"ext_len2.bin": conv_w_raw})

    def ext_no_location(nodes, ins, outs, inits):
        t = init(inits, "conv_w")
        external(t, "unused.bin")
        del t.external_data[:]
    add("external_no_location", base(ext_no_location), ["conv_w"],
        "conv_w marked EXTERNAL with no location key")

    def ext_outside(nodes, ins, outs, inits):
        external(init(inits, "conv_w"), "../outside.bin", offset=0, length=432)
    add("external_outside_dir", base(ext_outside), ["conv_w", "outside.bin"],
        "conv_w's external data ../outside.bin lies outside the model's directory "
        "(the file exists and is the right size: CVE-2022-25882's path traversal)",
        {"../outside.bin": conv_w_raw})

    # ---- graph structure ----------------------------------------------------
    def ghost(nodes, ins, outs, inits):
        nodes[1].input[0] = "ghost_tensor"
    add("input_names_nothing", base(ghost), ["ghost_tensor"], "relu_a reads ghost_tensor, which nothing defines")

    def dup_out(nodes, ins, outs, inits):
        nodes.insert(2, helper.make_node("Relu", ["conv_out"], ["relu_out"], name="relu_dup"))
    add("duplicate_output_name", base(dup_out), ["relu_out"], "relu_a and relu_dup both write relu_out")

    def out_nowhere(nodes, ins, outs, inits):
        outs.append(vi("nowhere_out", [1, 10]))
    add("graph_output_undefined", base(out_nowhere), ["nowhere_out"], "graph output nowhere_out is never written")

    add("cycle", model([helper.make_node("Relu", ["cyc_t2"], ["cyc_t1"], name="cyc_a"),
                        helper.make_node("Add", ["cyc_t1", "img_in"], ["cyc_t2"], name="cyc_b")],
                       [vi("img_in", [2, 3])], [vi("cyc_t2", [2, 3])]),
        ["cyc_a", "cyc_b", "cyc_t1", "cyc_t2"], "cyc_a reads cyc_b's output and cyc_b cyc_a's")

    def neg_dim_input(nodes, ins, outs, inits):
        ins[0].CopyFrom(vi("img_in", [1, 3, -8, 8]))
    add("negative_dim_input", base(neg_dim_input), ["img_in"], "img_in's shape [1, 3, -8, 8]")

    def huge_dim_input(nodes, ins, outs, inits):
        ins[0].CopyFrom(vi("img_in", [1 << 62, 3, 1 << 62, 8]))
    add("huge_dims_input", base(huge_dim_input), ["img_in"],
        "img_in's shape [2^62, 3, 2^62, 8]: the element count overflows")

    def no_type_input(nodes, ins, outs, inits):
        ins[0].ClearField("type")
    add("input_without_type", base(no_type_input), ["img_in"], "img_in has no type")

    def seq_input(nodes, ins, outs, inits):
        ins[0].CopyFrom(helper.make_tensor_sequence_value_info("img_in", TensorProto.FLOAT, [1, 3, 8, 8]))
    add("input_sequence_type", base(seq_input), ["img_in"], "img_in is a sequence, not a tensor")

    def complex_input(nodes, ins, outs, inits):
        ins[0].CopyFrom(vi("img_in", [1, 3, 8, 8], TensorProto.COMPLEX128))
    add("input_complex128", base(complex_input), ["img_in"], "img_in is complex128")

    # Invalid UTF-8 in a tensor name: serialised with a placeholder of the
    # same length, replaced in the bytes (the onnx package refuses to write it).
    def utf8(nodes, ins, outs, inits):
        nodes[1].output[0] = "relu_QQQQ_out"
        nodes[2].input[0] = "relu_QQQQ_out"
    add("name_not_utf8", replace_once(base(utf8).SerializeToString(), b"relu_QQQQ_out", b"relu_\xff\xfe\xc0\x80_out"),
        ["relu_a", "reshape_a", "relu_"], "relu_a's output is named with bytes that are not UTF-8")

    # ---- declared graph outputs against the computed ones --------------------
    def out_shape(nodes, ins, outs, inits):
        outs[0].CopyFrom(vi("logits", [1, 12]))
    add("output_declared_wrong_shape", base(out_shape), ["logits"],
        "graph output logits declared [1, 12], computed [1, 10]")

    def out_rank(nodes, ins, outs, inits):
        outs[0].CopyFrom(vi("logits", [10]))
    add("output_declared_wrong_rank", base(out_rank), ["logits"],
        "graph output logits declared [10], computed [1, 10]")

    def out_dtype(nodes, ins, outs, inits):
        outs[0].CopyFrom(vi("logits", [1, 10], TensorProto.INT64))
    add("output_declared_wrong_dtype", base(out_dtype), ["logits"],
        "graph output logits declared int64, computed float")

    def out_symbolic(nodes, ins, outs, inits):
        outs[0].CopyFrom(vi("logits", ["batch", None]))
    add("control_output_dims_symbolic", base(out_symbolic), [],
        "graph output logits declared [batch, ?]: symbolic and unknown dims match any (must import)")

    # ---- operators and attributes -------------------------------------------
    def relu_three(nodes, ins, outs, inits):
        nodes[1].input.extend(["conv_out", "conv_out"])
    add("relu_three_inputs", base(relu_three), ["relu_a"], "relu_a has 3 inputs (Relu takes 1)")

    def gemm_one(nodes, ins, outs, inits):
        del nodes[3].input[1:]
    add("gemm_one_input", base(gemm_one), ["gemm_a"], "gemm_a has 1 input (Gemm takes 2 to 3)")

    add("concat_65_inputs",
        one_node(helper.make_node("Concat", ["img_in"] * 65, ["y"], name="concat_many", axis=1),
                 [vi("img_in", [1, 3, 8, 8])], [vi("y", [1, 195, 8, 8])]), ["concat_many"],
        "concat_many has 65 inputs (ONNX allows any number; tgc's nodes have at most 64)")

    def reshape_two_outputs(nodes, ins, outs, inits):
        nodes[2].output.append("flat_extra")
    add("reshape_two_outputs", base(reshape_two_outputs), ["reshape_a"],
        "reshape_a has 2 outputs (Reshape has 1)")

    def dup_attr(nodes, ins, outs, inits):
        nodes[0].attribute.extend([helper.make_attribute("group", 1), helper.make_attribute("group", 1)])
    add("attribute_twice", base(dup_attr), ["conv_a"], "conv_a carries attribute group twice")

    def dup_attr_values(nodes, ins, outs, inits):
        nodes[3].attribute.extend([helper.make_attribute("alpha", 2.0)])
        nodes[3].attribute.extend([helper.make_attribute("transB", 0)])
    add("attribute_twice_other_value", base(dup_attr_values), ["gemm_a"],
        "gemm_a carries transB=1 and transB=0")

    def dup_attr_many(nodes, ins, outs, inits):  # past the pairwise compare: the set's path
        nodes[1].attribute.extend([helper.make_attribute("extra_%d" % k, k) for k in range(40)])
        nodes[1].attribute.extend([helper.make_attribute("extra_7", 0)])
    add("attribute_twice_of_many", base(dup_attr_many), ["extra_7"],
        "relu_a carries 41 attributes, extra_7 twice (reported as such, not as an unknown one)")

    x4 = [vi("img_in", [1, 3, 8, 8])]
    add("unknown_op", one_node(helper.make_node("FrobnicateOp", ["img_in"], ["y"], name="frob_node"),
                               x4, [vi("y", [1, 3, 8, 8])]), ["frob_node"], "op type FrobnicateOp")
    add("unknown_domain", one_node(helper.make_node("Relu", ["img_in"], ["y"], name="custom_relu",
                                                    domain="com.example"),
                                   x4, [vi("y", [1, 3, 8, 8])], domains=["com.example"]),
        ["custom_relu"], "a Relu in domain com.example")
    then_g = helper.make_graph([helper.make_node("Identity", ["img_in"], ["t"])], "then", [],
                               [vi("t", [1, 3, 8, 8])])
    # (If and Scan are expanded; Loop's trip count is a run-time value)
    add("control_flow_loop", one_node(helper.make_node("Loop", ["", "cond"], ["y"], name="loop_node",
                                                       body=then_g),
                                      x4 + [vi("cond", [], TensorProto.BOOL)], [vi("y", [1, 3, 8, 8])]),
        ["loop_node"], "a Loop node (control flow)")

    def auto_pad(nodes, ins, outs, inits):
        set_attr(nodes[0], helper.make_attribute("auto_pad", "WEIRD_PAD"), drop="pads")
    add("conv_auto_pad_weird", base(auto_pad), ["conv_a"], "conv_a's auto_pad is WEIRD_PAD")

    def strides_float(nodes, ins, outs, inits):
        set_attr(nodes[0], helper.make_attribute("strides", [1.5, 1.5]))
    add("conv_strides_float", base(strides_float), ["conv_a"], "conv_a's strides are floats")

    def kernel_mismatch(nodes, ins, outs, inits):
        set_attr(nodes[0], helper.make_attribute("kernel_shape", [5, 5]))
    add("conv_kernel_shape_mismatch", base(kernel_mismatch), ["conv_a"],
        "conv_a's kernel_shape [5, 5] against a 3x3 weight")

    def conv_channels(nodes, ins, outs, inits):
        ins[0].CopyFrom(vi("img_in", [1, 5, 8, 8]))
    add("conv_channel_mismatch", base(conv_channels), ["conv_a"], "5 input channels into conv_a's 3")

    def conv_no_inputs(nodes, ins, outs, inits):
        del nodes[0].input[:]
    add("conv_no_inputs", base(conv_no_inputs), ["conv_a"], "conv_a has no inputs")

    roi, scales = f32("roi_e", (0,)), numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales_c")
    add("resize_cubic", one_node(helper.make_node("Resize", ["img_in", "roi_e", "scales_c"], ["y"],
                                                  name="resize_a", mode="cubic"),
                                 x4, [vi("y", [1, 3, 16, 16])], [roi, scales]),
        [], "Resize mode cubic (valid: imports)")
    add("resize_tf_crop", one_node(helper.make_node("Resize", ["img_in", "roi_e", "scales_c"], ["y"],
                                                    name="resize_b", mode="linear",
                                                    coordinate_transformation_mode="tf_crop_and_resize"),
                                   x4, [vi("y", [1, 3, 16, 16])], [roi, scales]),
        ["resize_b"], "Resize tf_crop_and_resize with an empty roi (it needs 2 x rank values)")
    # Every problem named at once: five distinct ones (two operators, a
    # data-dependent shape, an attribute, a run-time shape input), one of
    # them in two nodes; each node reads only graph inputs.
    five = [
        helper.make_node("HammingWindow", ["img_in"], ["tk_v"], name="roi_a"),
        helper.make_node("HammingWindow", ["img_in"], ["tk2_v"], name="roi_b"),
        helper.make_node("NonZero", ["img_in"], ["nz"], name="nonzero_a"),
        helper.make_node("MaxPool", ["img_in"], ["mp"], name="mp_bogus", kernel_shape=[2, 2], bogus=1),
        helper.make_node("Reshape", ["img_in", "shape_in"], ["rs"], name="reshape_rt"),
        helper.make_node("STFT", ["img_in", "grid_in"], ["gs"], name="tfidf_a"),
    ]
    add("five_problems",
        model(five, x4 + [vi("shape_in", [2], TensorProto.INT64), vi("grid_in", [1, 4, 4, 2])],
              [vi(o, None) for o in ("tk_v", "tk2_v", "nz", "mp", "rs", "gs")], [i64("k_c", [2])]),
        ["roi_a", "roi_b", "nonzero_a", "'bogus'", "reshape_rt", "shape_in", "tfidf_a",
         "5 distinct problems in 6 nodes"],
        "five distinct unsupported nodes (HammingWindow twice): every one named, counted", expect_all=True)
    # If and Scan (frontend/onnx/ox_control.c): what a fixed-shape
    # expansion cannot take
    then_g = helper.make_graph([helper.make_node("Identity", ["img_in"], ["t"])], "then", [],
                               [vi("t", [1, 3, 8, 8])])
    else_g = helper.make_graph([helper.make_node("ReduceSum", ["img_in"], ["e"], keepdims=1)], "else", [],
                               [vi("e", [1, 1, 1, 1])])
    add("if_branch_shapes_differ",
        one_node(helper.make_node("If", ["cond_in"], ["y"], name="if_shapes", then_branch=then_g,
                                  else_branch=else_g),
                 x4 + [vi("cond_in", [], TensorProto.BOOL)], [vi("y", None)]),
        ["if_shapes", "then_branch", "else_branch"], "If whose branches give different shapes")
    sbody = helper.make_graph([helper.make_node("Add", ["s_in", "v"], ["s_out"])], "body",
                              [vi("s_in", [2]), vi("v", [2])], [vi("s_out", [2])])
    add("scan_too_long",
        model([helper.make_node("Scan", ["s0", "seq_in"], ["s"], name="scan_long", body=sbody,
                                num_scan_inputs=1),
               helper.make_node("Relu", ["s"], ["r"], name="after_scan"),
               helper.make_node("NonZero", ["s0"], ["nz"], name="nonzero_b")],
              [vi("s0", [2]), vi("seq_in", [100, 2])], [vi("r", [2]), vi("nz", None)]),
        ["scan_long", "100 iterations", "nonzero_b", "2 distinct problems in 2 nodes"],
        "Scan over 100 iterations (at most 64 are expanded), named with the model's other problem",
        expect_all=True)
    add("scan_length_unknown",
        one_node(helper.make_node("Scan", ["s0", "seq_in"], ["s"], name="scan_sym", body=sbody,
                                  num_scan_inputs=1),
                 [vi("s0", [2]), vi("seq_in", ["steps", 2])], [vi("s", [2])]),
        ["scan_sym", "seq_in", "must be known"], "Scan over a symbolic length")
    add("pad_mode_symmetric",
        one_node(helper.make_node("Pad", ["img_in", "pads_c"], ["y"], name="pad_a", mode="symmetric"),
                 x4, [vi("y", [1, 3, 10, 10])], [i64("pads_c", [0, 0, 1, 1, 0, 0, 1, 1])]),
        ["pad_a"], "Pad mode symmetric (numpy's; ONNX has constant, reflect, edge, and wrap from opset 19)")
    bn = [f32("bn_%s" % k, (3,), i) for i, k in enumerate(("s", "b", "m", "v"))]
    bn[3] = numpy_helper.from_array(np.ones(3, np.float32), "bn_v")
    add("batchnorm_training_5_outputs",
        one_node(helper.make_node("BatchNormalization", ["img_in", "bn_s", "bn_b", "bn_m", "bn_v"],
                                  ["y", "rm", "rv", "sm", "sv"], name="bn_train", training_mode=1),
                 x4, [vi("y", [1, 3, 8, 8])] + [vi(o, [3]) for o in ("rm", "rv", "sm", "sv")], bn),
        ["bn_train"], "BatchNormalization with training_mode=1 and 5 outputs (opset 14 has 3)")
    add("batchnorm_training",
        one_node(helper.make_node("BatchNormalization", ["img_in", "bn_s", "bn_b", "bn_m", "bn_v"],
                                  ["y", "rm", "rv"], name="bn_train3", training_mode=1, momentum=0.8),
                 x4, [vi("y", [1, 3, 8, 8]), vi("rm", [3]), vi("rv", [3])], bn),
        [], "BatchNormalization with training_mode=1 (valid: imports)")
    # the operators of ox_linalg.c, ox_qlinear.c and ox_ops_train.c
    add("det_not_square", one_node(helper.make_node("Det", ["rect_in"], ["y"], name="det_rect"),
                                   [vi("rect_in", [2, 3, 4])], [vi("y", [2])]),
        ["det_rect"], "a Det of [2, 3, 4] matrices")
    add("dft_last_dim_3", one_node(helper.make_node("DFT", ["sig3_in"], ["y"], name="dft_bad", axis=1),
                                   [vi("sig3_in", [1, 8, 3])], [vi("y", [1, 8, 2])]),
        ["dft_bad"], "a DFT whose input's last dim is 3 (1: real, 2: complex)")
    add("dft_length_runtime",
        one_node(helper.make_node("DFT", ["sig_in", "dft_len"], ["y"], name="dft_rt_len", axis=1),
                 [vi("sig_in", [1, 8, 1]), vi("dft_len", [], TensorProto.INT64)], [vi("y", [1, 8, 2])]),
        ["dft_rt_len", "dft_len"], "a DFT whose dft_length is a graph input", expect_all=True)
    add("convinteger_float",
        one_node(helper.make_node("ConvInteger", ["img_in", "ci_w"], ["y"], name="convint_f"),
                 x4 + [vi("ci_w", [2, 3, 3, 3], TensorProto.UINT8)], [vi("y", [1, 2, 6, 6], TensorProto.INT32)]),
        ["convint_f"], "a ConvInteger of a float input")
    add("matmulinteger_inner",
        one_node(helper.make_node("MatMulInteger", ["mi_a", "mi_b"], ["y"], name="mmint_k"),
                 [vi("mi_a", [4, 3], TensorProto.UINT8), vi("mi_b", [5, 2], TensorProto.UINT8)],
                 [vi("y", [4, 2], TensorProto.INT32)]),
        ["mmint_k"], "a MatMulInteger of [4, 3] by [5, 2]")
    add("matmulinteger_too_long",
        one_node(helper.make_node("MatMulInteger", ["ml_a", "ml_b"], ["y"], name="mmint_long"),
                 [vi("ml_a", [1, 40000], TensorProto.UINT8), vi("ml_b", [40000, 1], TensorProto.UINT8)],
                 [vi("y", [1, 1], TensorProto.INT32)]),
        ["mmint_long"], "a MatMulInteger over 40000 terms (an int32 sum could overflow)")
    q8 = [vi(n, s, t) for n, s, t in (("qa", [2, 4], TensorProto.UINT8), ("qa_s", [], TensorProto.DOUBLE),
                                       ("qa_z", [], TensorProto.UINT8), ("qb", [4, 3], TensorProto.UINT8),
                                       ("qb_s", [], TensorProto.FLOAT), ("qb_z", [], TensorProto.UINT8),
                                       ("qy_s", [], TensorProto.FLOAT), ("qy_z", [], TensorProto.UINT8))]
    add("qlinearmatmul_double_scale",
        one_node(helper.make_node("QLinearMatMul", [v.name for v in q8], ["y"], name="qlmm_scale"),
                 q8, [vi("y", [2, 3], TensorProto.UINT8)]),
        ["qlmm_scale"], "a QLinearMatMul whose a_scale is a double")
    qc = [vi(n, s, t) for n, s, t in (("qx", [1, 2, 5, 5], TensorProto.UINT8), ("qx_s", [], TensorProto.FLOAT),
                                       ("qx_z", [], TensorProto.UINT8), ("qw", [2, 2, 3, 3], TensorProto.UINT8),
                                       ("qw_s", [3], TensorProto.FLOAT), ("qw_z", [], TensorProto.UINT8),
                                       ("qy_s", [], TensorProto.FLOAT), ("qy_z", [], TensorProto.UINT8))]
    add("qlinearconv_scales",
        one_node(helper.make_node("QLinearConv", [v.name for v in qc], ["y"], name="qlconv_ws"),
                 qc, [vi("y", [1, 2, 3, 3], TensorProto.UINT8)]),
        ["qlconv_ws"], "a QLinearConv with 3 w_scale values for 2 output channels")
    drop = [numpy_helper.from_array(np.array(0.5, np.float32), "drop_r"),
            numpy_helper.from_array(np.array(True), "drop_t")]
    add("dropout_random",
        one_node(helper.make_node("Dropout", ["img_in", "drop_r", "drop_t"], ["y"], name="dropout_train"),
                 x4, [vi("y", [1, 3, 8, 8])], drop),
        ["dropout_train"], "a Dropout in training mode with ratio 0.5 (random: numpy's generator)")
    add("dropout_random_known_input",
        one_node(helper.make_node("Dropout", ["drop_x", "drop_r", "drop_t"], ["y"], name="dropout_const"),
                 [], [vi("y", [2, 3])], drop + [f32("drop_x", [2, 3])]),
        ["dropout_const"], "a Dropout of an initializer in training mode with ratio 0.5 (not folded)")
    add("compress_runtime",
        one_node(helper.make_node("Compress", ["img_in", "cond_in"], ["y"], name="compress_rt", axis=1),
                 x4 + [vi("cond_in", [3], TensorProto.BOOL)], [vi("y", [1, None, 8, 8])]),
        ["compress_rt"], "a Compress whose condition is a graph input (a data-dependent shape)")
    cond4 = numpy_helper.from_array(np.array([True, False, True, True]), "cond_4")
    add("compress_long_condition",
        one_node(helper.make_node("Compress", ["img_in", "cond_4"], ["y"], name="compress_long", axis=1),
                 x4, [vi("y", [1, 3, 8, 8])], [cond4]),
        ["compress_long"], "a Compress whose condition has 4 values for an axis of 3")
    add("bernoulli", one_node(helper.make_node("Bernoulli", ["img_in"], ["y"], name="bernoulli_a"),
                              x4, [vi("y", [1, 3, 8, 8])]),
        ["bernoulli_a"], "a Bernoulli (random)")

    def reshape_bad(nodes, ins, outs, inits):
        inits[2].CopyFrom(i64("shape_c", [5, 7]))
    add("reshape_bad_shape", base(reshape_bad), ["reshape_a"], "reshape_a: 256 elements into [5, 7]")

    def reshape_two_minus1(nodes, ins, outs, inits):
        inits[2].CopyFrom(i64("shape_c", [-1, -1]))
    add("reshape_two_minus_one", base(reshape_two_minus1), ["reshape_a"], "reshape_a's shape [-1, -1]")

    def reshape_huge(nodes, ins, outs, inits):
        inits[2].CopyFrom(i64("shape_c", [1 << 62, 1 << 62]))
    add("reshape_huge", base(reshape_huge), ["reshape_a"], "reshape_a's shape [2^62, 2^62]")

    def gemm_mismatch(nodes, ins, outs, inits):
        inits[3].CopyFrom(f32("fc_w", (10, 200), 3))
    add("gemm_inner_mismatch", base(gemm_mismatch), ["gemm_a"], "gemm_a: [1, 256] by fc_w [10, 200]^T")

    add("concat_axis_out_of_range",
        one_node(helper.make_node("Concat", ["img_in", "img_in"], ["y"], name="concat_bad", axis=7),
                 x4, [vi("y", [2, 3, 8, 8])]), ["concat_bad"], "concat_bad's axis 7 of a 4-d input")
    add("transpose_perm_repeated",
        one_node(helper.make_node("Transpose", ["img_in"], ["y"], name="transpose_bad", perm=[0, 1, 1, 2]),
                 x4, [vi("y", [1, 3, 3, 8])]), ["transpose_bad"], "transpose_bad's perm [0, 1, 1, 2]")
    add("split_sizes_wrong",
        one_node(helper.make_node("Split", ["img_in", "split_c"], ["y1", "y2"], name="split_bad", axis=1),
                 x4, [vi("y1", [1, 1, 8, 8]), vi("y2", [1, 1, 8, 8])], [i64("split_c", [1, 1])]),
        ["split_bad"], "split_bad splits 3 channels into [1, 1]")
    add("squeeze_non_one",
        one_node(helper.make_node("Squeeze", ["img_in", "axes_c"], ["y"], name="squeeze_bad"),
                 x4, [vi("y", [1, 8, 8])], [i64("axes_c", [1])]), ["squeeze_bad"],
        "squeeze_bad squeezes the axis of size 3")
    add("gather_index_out_of_range",
        model([helper.make_node("Shape", ["img_in"], ["shp"], name="shape_a"),
               helper.make_node("Gather", ["shp", "idx_c"], ["g"], name="gather_oob", axis=0),
               helper.make_node("Reshape", ["img_in", "g"], ["y"], name="reshape_g")],
              x4, [vi("y", [192])], [i64("idx_c", [10])]),
        ["gather_oob"], "gather_oob takes index 10 of a 4-element shape (folded at import)")
    add("constant_without_value",
        model([helper.make_node("Constant", [], ["c"], name="const_empty"),
               helper.make_node("Add", ["img_in", "c"], ["y"], name="add_c")],
              x4, [vi("y", [1, 3, 8, 8])]), ["const_empty"], "a Constant node with no value attribute")
    add("constant_of_shape_huge",
        model([helper.make_node("ConstantOfShape", ["big_shape"], ["c"], name="cos_huge"),
               helper.make_node("Add", ["img_in", "c"], ["y"], name="add_huge")],
              x4, [vi("y", [1, 3, 8, 8])], [i64("big_shape", [1 << 20, 1 << 20, 1 << 20])]),
        ["cos_huge", "add_huge"], "ConstantOfShape [2^20, 2^20, 2^20] (folding it would need 2^62 bytes)")
    add("matmul_rank_mismatch",
        one_node(helper.make_node("MatMul", ["img_in", "mm_w"], ["y"], name="matmul_bad"),
                 x4, [vi("y", [1, 3, 8, 5])], [f32("mm_w", (7, 5))]),
        ["matmul_bad"], "matmul_bad: [.., 8] @ [7, 5]")

    # ---- what could divide by zero, loop forever or overrun a fixed array ----
    def empty_weight_name(nodes, ins, outs, inits):
        nodes[0].input[1] = ""
    add("conv_weight_name_empty", base(empty_weight_name), ["conv_a"],
        "conv_a's weight input is \"\" (an omitted optional input)")

    def dup_init(nodes, ins, outs, inits):
        inits.append(f32("conv_w", (4, 3, 3, 3), 9))
    add("duplicate_initializer", base(dup_init), ["conv_w"], "two initializers named conv_w")
    deep = [1] * 13
    add("rank_13_initializer",
        one_node(helper.make_node("Add", ["img_in", "deep_t"], ["y"], name="add_deep"),
                 x4, [vi("y", deep)], [numpy_helper.from_array(np.ones(deep, np.float32), "deep_t")]),
        ["deep_t", "add_deep"], "initializer deep_t has 13 dimensions")
    add("rank_13_input", one_node(helper.make_node("Relu", ["deep_in"], ["y"], name="relu_deep"),
                                  [vi("deep_in", deep)], [vi("y", deep)]),
        ["deep_in", "relu_deep"], "graph input deep_in has 13 dimensions")

    def group_zero(nodes, ins, outs, inits):
        set_attr(nodes[0], helper.make_attribute("group", 0))
    add("conv_group_zero", base(group_zero), ["conv_a"], "conv_a's group is 0")

    def stride_zero(nodes, ins, outs, inits):
        set_attr(nodes[0], helper.make_attribute("strides", [0, 0]))
    add("conv_stride_zero", base(stride_zero), ["conv_a"], "conv_a's strides are [0, 0]")
    add("maxpool_kernel_zero",
        one_node(helper.make_node("MaxPool", ["img_in"], ["y"], name="pool_zero", kernel_shape=[0, 0]),
                 x4, [vi("y", [1, 3, 8, 8])]), ["pool_zero"], "pool_zero's kernel_shape is [0, 0]")
    add("slice_step_zero",
        one_node(helper.make_node("Slice", ["img_in", "st_c", "en_c", "ax_c", "sp_c"], ["y"], name="slice_zero"),
                 x4, [vi("y", [1, 3, 4, 8])], [i64("st_c", [0]), i64("en_c", [8]), i64("ax_c", [2]),
                                               i64("sp_c", [0])]),
        ["slice_zero"], "slice_zero's step is 0")
    add("range_delta_zero",
        model([helper.make_node("Range", ["r0", "r1", "rd"], ["r"], name="range_zero"),
               helper.make_node("Reshape", ["img_in", "r"], ["y"], name="reshape_r")],
              x4, [vi("y", [192])], [i64("r0", 0), i64("r1", 5), i64("rd", 0)]),
        ["range_zero"], "range_zero's delta is 0 (folded at import: must not loop forever)")
    shape_div = [helper.make_node("Shape", ["img_in"], ["shp"], name="shape_d"),
                 None,
                 helper.make_node("Reshape", ["img_in", "q"], ["y"], name="reshape_q")]
    shape_div[1] = helper.make_node("Div", ["shp", "zero_c"], ["q"], name="div_zero")
    add("int_div_by_zero_folded", model(shape_div, x4, [vi("y", [1, 3, 8, 8])], [i64("zero_c", [0, 1, 1, 1])]),
        ["div_zero"], "div_zero divides the int64 shape by [0, 1, 1, 1] (folded at import)")
    shape_mod = list(shape_div)
    shape_mod[1] = helper.make_node("Mod", ["shp", "zero_c"], ["q"], name="mod_zero")
    add("int_mod_by_zero_folded", model(shape_mod, x4, [vi("y", [1, 3, 8, 8])], [i64("zero_c", [0, 1, 1, 1])]),
        ["mod_zero"], "mod_zero: the int64 shape modulo [0, 1, 1, 1] (folded at import)")
    add("cast_to_string",
        one_node(helper.make_node("Cast", ["img_in"], ["y"], name="cast_str", to=TensorProto.STRING),
                 x4, [vi("y", [1, 3, 8, 8], TensorProto.STRING)]), ["cast_str"], "cast_str casts to STRING")
    add("transpose_perm_out_of_range",
        one_node(helper.make_node("Transpose", ["img_in"], ["y"], name="transpose_far", perm=[0, 1, 2, 9]),
                 x4, [vi("y", [1, 3, 8, 8])]), ["transpose_far"], "transpose_far's perm names axis 9 of 4")
    neg_scales = numpy_helper.from_array(np.array([1, 1, -2, 2], np.float32), "neg_scales")
    add("resize_scale_negative",
        one_node(helper.make_node("Resize", ["img_in", "", "neg_scales"], ["y"], name="resize_neg", mode="nearest",
                                  coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
                 x4, [vi("y", [1, 3, 16, 16])], [neg_scales]), ["resize_neg"], "resize_neg's scales [1, 1, -2, 2]")
    # ops lowered to several IR ops (frontend/onnx/ox_ops_math.c): bad inputs named
    v1 = [vi("v_in", [5])]
    add("trilu_rank_1", one_node(helper.make_node("Trilu", ["v_in"], ["y"], name="trilu_flat"),
                                 v1, [vi("y", [5])]), ["trilu_flat"], "a Trilu of a rank-1 tensor")
    add("cumsum_float_axis",
        one_node(helper.make_node("CumSum", ["img_in", "ax_f"], ["y"], name="cumsum_fax"),
                 x4 + [vi("ax_f", [])], [vi("y", [1, 3, 8, 8])]), ["cumsum_fax"],
        "a CumSum whose axis is a float")
    ax9 = numpy_helper.from_array(np.array(9, np.int64), "ax9")
    add("cumsum_axis_out_of_range",
        one_node(helper.make_node("CumSum", ["img_in", "ax9"], ["y"], name="cumsum_far"),
                 x4, [vi("y", [1, 3, 8, 8])], [ax9]), ["cumsum_far"], "a CumSum along axis 9 of 4")
    add("clip_min_rank_2",
        one_node(helper.make_node("Clip", ["img_in", "lo_2d"], ["y"], name="clip_2d_min"),
                 x4 + [vi("lo_2d", [2, 2])], [vi("y", [1, 3, 8, 8])]), ["clip_2d_min"],
        "a Clip whose min is a [2, 2] tensor")
    add("eyelike_rank_4", one_node(helper.make_node("EyeLike", ["img_in"], ["y"], name="eye_4d"),
                                   x4, [vi("y", [1, 3, 8, 8])]), ["eye_4d"], "an EyeLike of a rank-4 tensor")
    add("isinf_of_ints", one_node(helper.make_node("IsInf", ["i_in"], ["y"], name="isinf_int"),
                                  [vi("i_in", [4], TensorProto.INT32)], [vi("y", [4], TensorProto.BOOL)]),
        ["isinf_int"], "an IsInf of int32")
    add("avgpool_of_ints",
        one_node(helper.make_node("AveragePool", ["i4_in"], ["y"], name="avgpool_int", kernel_shape=[2, 2]),
                 [vi("i4_in", [1, 1, 4, 4], TensorProto.INT32)], [vi("y", [1, 1, 3, 3], TensorProto.INT32)]),
        ["avgpool_int"], "an AveragePool of int32")
    add("maxpool_3d_huge_window",
        one_node(helper.make_node("MaxPool", ["v5_in"], ["y"], name="maxpool_huge", kernel_shape=[9, 9, 9]),
                 [vi("v5_in", [1, 1, 9, 9, 9])], [vi("y", [1, 1, 1, 1, 1])]),
        ["maxpool_huge"], "a 3-d MaxPool window of 729 positions")
    w3 = f32("w3", [2, 1, 2, 2, 2])
    add("conv3d_kernel_shape",
        one_node(helper.make_node("Conv", ["v5_in", "w3"], ["y"], name="conv3d_ks", kernel_shape=[3, 3, 3]),
                 [vi("v5_in", [1, 1, 9, 9, 9])], [vi("y", [1, 2, 8, 8, 8])], [w3]),
        ["conv3d_ks"], "a 3-d Conv whose kernel_shape disagrees with its 2x2x2 weight")
    add("conv3d_channels",
        one_node(helper.make_node("Conv", ["c3_in", "w3"], ["y"], name="conv3d_ch"),
                 [vi("c3_in", [1, 3, 9, 9, 9])], [vi("y", [1, 2, 8, 8, 8])], [w3]),
        ["conv3d_ch"], "a 3-d Conv of 3 channels with a weight for 1")
    up2 = numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "up2")
    add("resize_nearest_mode_bogus",
        one_node(helper.make_node("Resize", ["img_in", "", "up2"], ["y"], name="resize_bogus_nm", mode="nearest",
                                  nearest_mode="bogus"),
                 x4, [vi("y", [1, 3, 16, 16])], [up2]), ["resize_bogus_nm"], "a Resize whose nearest_mode is bogus")
    add("resize_cubic_ints",
        one_node(helper.make_node("Resize", ["i4_in", "", "up2"], ["y"], name="resize_cubic_int", mode="cubic"),
                 [vi("i4_in", [1, 1, 4, 4], TensorProto.INT32)], [vi("y", [1, 1, 8, 8], TensorProto.INT32)], [up2]),
        ["resize_cubic_int"], "a cubic Resize of int32")
    add("scatter_float_indices",
        one_node(helper.make_node("ScatterElements", ["img_in", "idx_f", "img_in"], ["y"], name="scatter_fidx"),
                 x4 + [vi("idx_f", [1, 3, 8, 8])], [vi("y", [1, 3, 8, 8])]), ["scatter_fidx"],
        "a ScatterElements with float indices")
    add("scatter_bad_reduction",
        one_node(helper.make_node("ScatterElements", ["img_in", "idx_i", "img_in"], ["y"], name="scatter_red",
                                  reduction="average"),
                 x4 + [vi("idx_i", [1, 3, 8, 8], TensorProto.INT64)], [vi("y", [1, 3, 8, 8])]), ["scatter_red"],
        "a ScatterElements with reduction 'average'")
    add("gathernd_tuple_too_long",
        one_node(helper.make_node("GatherND", ["img_in", "idx_5"], ["y"], name="gathernd_long"),
                 x4 + [vi("idx_5", [2, 5], TensorProto.INT64)], [vi("y", [2])]), ["gathernd_long"],
        "a GatherND with index tuples of 5 into rank 4")
    add("quantize_float_zero_point",
        one_node(helper.make_node("QuantizeLinear", ["img_in", "q_scale", "q_zp"], ["y"], name="quant_fzp"),
                 x4 + [vi("q_scale", []), vi("q_zp", [])], [vi("y", [1, 3, 8, 8], TensorProto.UINT8)]),
        ["quant_fzp"], "a QuantizeLinear whose zero point is a float")
    k99 = i64("k_99", [99])
    add("topk_k_too_large",
        one_node(helper.make_node("TopK", ["img_in", "k_99"], ["tv", "ti"], name="topk_big"),
                 x4, [vi("tv", [1, 3, 8, 99]), vi("ti", [1, 3, 8, 99], TensorProto.INT64)], [k99]),
        ["topk_big"], "a TopK of 99 along an axis of 8")
    cw = f32("conv_w_asym", [4, 3, 3, 3])
    add("conv_asymmetric_pads_size",
        one_node(helper.make_node("Conv", ["img_in", "conv_w_asym"], ["y"], name="conv_asym", pads=[0, 0, 1, 1]),
                 x4, [vi("y", [1, 4, 7, 7])], [cw]),
        [], "a Conv with pads [0, 0, 1, 1] declared [1, 4, 7, 7] (valid: the size counts the moved pads)")
    small = i64("unpool_small", [1, 3, 2, 2])
    add("maxunpool_output_too_small",
        one_node(helper.make_node("MaxUnpool", ["img_in", "unpool_idx", "unpool_small"], ["y"], name="unpool_small_out",
                                  kernel_shape=[2, 2], strides=[2, 2]),
                 x4 + [vi("unpool_idx", [1, 3, 8, 8], TensorProto.INT64)], [vi("y", [1, 3, 2, 2])], [small]),
        ["unpool_small_out"], "a MaxUnpool whose output_shape is smaller than the unpooled 16x16")
    add("bitshift_direction",
        one_node(helper.make_node("BitShift", ["u8_a", "u8_b"], ["y"], name="shift_up", direction="UP"),
                 [vi("u8_a", [4], TensorProto.UINT8), vi("u8_b", [4], TensorProto.UINT8)],
                 [vi("y", [4], TensorProto.UINT8)]), ["shift_up"], "a BitShift whose direction is UP")
    add("lrn_size_0", one_node(helper.make_node("LRN", ["img_in"], ["y"], name="lrn_zero", size=0),
                               x4, [vi("y", [1, 3, 8, 8])]), ["lrn_zero"], "an LRN of size 0")
    seq_x = [vi("seq_x", [5, 2, 4])]
    rnn_w = f32("rnn_w", [1, 16, 4])
    add("lstm_w_wrong_shape",
        one_node(helper.make_node("LSTM", ["seq_x", "rnn_w", "lstm_r"], ["", "yh"], name="lstm_w",
                                  hidden_size=3),
                 seq_x, [vi("yh", [1, 2, 3])], [rnn_w, f32("lstm_r", [1, 12, 3])]),
        ["lstm_w", "W has shape"], "an LSTM of hidden size 3 whose W is [1, 16, 4] (4 gates x 3 = 12 rows)", expect_all=True)
    add("gru_unknown_activation",
        one_node(helper.make_node("GRU", ["seq_x", "gru_w", "gru_r"], ["", "yh"], name="gru_act",
                                  hidden_size=2, activations=["Sigmoid", "Swish"]),
                 seq_x, [vi("yh", [1, 2, 2])], [f32("gru_w", [1, 6, 4]), f32("gru_r", [1, 6, 2])]),
        ["gru_act", "Swish"], "a GRU whose activations name Swish", expect_all=True)
    add("rnn_symbolic_sequence",
        one_node(helper.make_node("RNN", ["seq_sym", "rnn_w2", "rnn_r2"], ["", "yh"], name="rnn_sym",
                                  hidden_size=2),
                 [vi("seq_sym", ["T", 2, 4])], [vi("yh", [1, 2, 2])],
                 [f32("rnn_w2", [1, 2, 4]), f32("rnn_r2", [1, 2, 2])]),
        ["rnn_sym", "sequence length"], "an RNN over a sequence whose length is a symbolic dim", expect_all=True)
    add("maxpool_storage_order_2",
        one_node(helper.make_node("MaxPool", ["img_in"], ["y", "yi"], name="mp_order", kernel_shape=[2, 2],
                                  storage_order=2),
                 x4, [vi("y", [1, 3, 7, 7]), vi("yi", [1, 3, 7, 7], TensorProto.INT64)]),
        ["mp_order", "storage_order 2"], "a MaxPool with indices and storage_order 2", expect_all=True)
    add("convtranspose3d_asymmetric_hw",
        one_node(helper.make_node("ConvTranspose", ["vol_in", "ct3_w"], ["y"], name="ct3_pads",
                                  pads=[0, 0, 1, 0, 0, 0]),
                 [vi("vol_in", [1, 2, 3, 4, 4])], [vi("y", [1, 2, 5, 5, 6])], [f32("ct3_w", [2, 2, 3, 3, 3])]),
        ["ct3_pads", "asymmetric"], "a 3-d ConvTranspose with asymmetric width pads", expect_all=True)
    add("gridsample_bad_mode",
        one_node(helper.make_node("GridSample", ["img_in", "gs_grid"], ["y"], name="gs_mode", mode="area"),
                 x4 + [vi("gs_grid", [1, 4, 4, 2])], [vi("y", [1, 3, 4, 4])]),
        ["gs_mode", "area"], "a GridSample whose mode is area", expect_all=True)
    add("gridsample_grid_shape",
        one_node(helper.make_node("GridSample", ["img_in", "gs_grid3"], ["y"], name="gs_grid"),
                 x4 + [vi("gs_grid3", [1, 4, 4, 3])], [vi("y", [1, 3, 4, 4])]),
        ["gs_grid", "grid has shape"], "a GridSample whose grid's last dim is 3", expect_all=True)
    return out


def write(out_dir):
    """Writes every case under out_dir (each in a directory of its own, so that
    external files resolve next to it); returns the list of dicts written to
    cases.json: name, path, expect, what."""
    listing = []
    for name, data, expect, what, files, expect_all in cases():
        d = os.path.join(out_dir, name, "model")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, name + ".onnx")
        with open(path, "wb") as f:
            f.write(data)
        for rel, blob in files.items():
            with open(os.path.normpath(os.path.join(d, rel)), "wb") as f:
                f.write(blob)
        listing.append(dict(name=name, path=path, expect=expect, what=what, expect_all=expect_all))
    with open(os.path.join(out_dir, "cases.json"), "w") as f:
        json.dump(listing, f, indent=1)
    return listing


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    listing = write(a.out)
    for c in listing:
        print("%-28s %s" % (c["name"], c["what"]))
    print("%d files (%d malformed or unsupported)" % (len(listing), sum(1 for c in listing if c["expect"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
