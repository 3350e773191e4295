#!/usr/bin/env node
// ONNX Runtime (onnxruntime-node, CPU) on one .onnx file, for bench/onnx.py.
//
//   node bench/ort_run.js --model M.onnx --input NAME=FILE.npy [--input ...]
//        [--threads T] [--budget S] [--runs N] [--output-dir DIR] [--ort DIR]
//
// Creates the session as bench/onnx.py's ORT column is defined:
// InferenceSession.create(path, {intraOpNumThreads: T, interOpNumThreads: 1,
// graphOptimizationLevel: "all"}), feeds the inputs (.npy: '<f4', '<i8' or
// '<i4', C order), writes each output as DIR/NAME.npy ('<f4') when
// --output-dir is given (onnx.py checks it against PyTorch's), then times:
// 3 warm-up runs, an estimate from one more, and N timed runs (N from
// --runs, else enough for about --budget seconds, 5..2000, as bench/run.py
// chooses), each one awaited `session.run(feeds)` timed by
// process.hrtime. Prints one JSON line on stdout:
//   {"runs": N, "median_us": ..., "min_us": ..., "max_us": ...,
//    "create_ms": ..., "outputs": {"NAME": [shape]}, "ort": "1.30.0"}
// --ort is the folder holding node_modules/onnxruntime-node (default:
// bench/.ort, where bench/setup_ort.sh installs it). Errors: a message on
// stderr naming the input or option, exit 1.
"use strict";

const fs = require("fs");
const path = require("path");

function fail(msg) {
    process.stderr.write("ort_run.js: " + msg + "\n");
    process.exit(1);
}

function parseArgs(argv) {
    const a = {inputs: [], threads: 1, budget: 2, runs: 0, outputDir: null,
               ort: path.join(__dirname, ".ort"), model: null};
    for (let i = 0; i < argv.length; i++) {
        const k = argv[i], v = argv[i + 1];
        const need = () => {
            if (v === undefined)
                fail(k + " needs a value");
            i++;
            return v;
        };
        if (k === "--model")
            a.model = need();
        else if (k === "--input") {
            const s = need(), eq = s.indexOf("=");
            if (eq <= 0)
                fail("--input expects NAME=FILE.npy, got '" + s + "'");
            a.inputs.push([s.slice(0, eq), s.slice(eq + 1)]);
        } else if (k === "--threads")
            a.threads = Number(need());
        else if (k === "--budget")
            a.budget = Number(need());
        else if (k === "--runs")
            a.runs = Number(need());
        else if (k === "--output-dir")
            a.outputDir = need();
        else if (k === "--ort")
            a.ort = need();
        else
            fail("unknown option '" + k + "'");
    }
    if (!a.model)
        fail("--model M.onnx is required");
    if (!Number.isInteger(a.threads) || a.threads < 1)
        fail("--threads expects a positive integer");
    if (!(a.budget > 0))
        fail("--budget expects seconds > 0");
    if (!Number.isInteger(a.runs) || a.runs < 0)
        fail("--runs expects a non-negative integer");
    return a;
}

// A .npy file (version 1-3, C order) -> {type, dims, data}.
const NPY_TYPES = {"<f4": ["float32", Float32Array], "<i8": ["int64", BigInt64Array],
                   "<i4": ["int32", Int32Array]};

function readNpy(file) {
    let buf;
    try {
        buf = fs.readFileSync(file);
    } catch (e) {
        fail(file + ": " + e.message);
    }
    if (buf.length < 10 || buf.toString("latin1", 0, 6) !== "\x93NUMPY")
        fail(file + ": not a .npy file (no \\x93NUMPY magic)");
    const major = buf[6];
    const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
    const start = (major === 1 ? 10 : 12) + hlen;
    if (start > buf.length)
        fail(file + ": .npy header runs past the end of the file");
    const header = buf.toString("latin1", major === 1 ? 10 : 12, start);
    const descr = /'descr':\s*'([^']+)'/.exec(header);
    const order = /'fortran_order':\s*(True|False)/.exec(header);
    const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
    if (!descr || !order || !shape)
        fail(file + ": .npy header without descr, fortran_order or shape: " + header.trim());
    if (order[1] === "True")
        fail(file + ": Fortran-order arrays are not supported (write it C-contiguous)");
    const t = NPY_TYPES[descr[1]];
    if (!t)
        fail(file + ": dtype " + descr[1] + " (expected <f4, <i8 or <i4)");
    const dims = shape[1].split(",").map(s => s.trim()).filter(s => s.length).map(Number);
    const count = dims.reduce((p, d) => p * d, 1);
    const bytes = count * t[1].BYTES_PER_ELEMENT;
    if (buf.length - start !== bytes)
        fail(file + ": " + (buf.length - start) + " data bytes for shape [" + dims + "] of " +
             descr[1] + " (expected " + bytes + ")");
    // Copy into an aligned buffer: the data offset need not be a multiple of 8.
    const data = new t[1](count);
    Buffer.from(data.buffer).set(buf.subarray(start));
    return {type: t[0], dims, data};
}

function writeNpyF32(file, dims, data) {
    let header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                 dims.join(", ") + (dims.length === 1 ? "," : "") + "), }";
    const pad = 64 - ((10 + header.length + 1) % 64);
    header += " ".repeat(pad % 64) + "\n";
    const head = Buffer.alloc(10);
    head.write("\x93NUMPY", 0, "latin1");
    head[6] = 1;
    head[7] = 0;
    head.writeUInt16LE(header.length, 8);
    const f32 = data instanceof Float32Array ? data : Float32Array.from(data, Number);
    fs.writeFileSync(file, Buffer.concat([head, Buffer.from(header, "latin1"),
                                          Buffer.from(f32.buffer, f32.byteOffset, f32.byteLength)]));
}

function median(v) {
    const s = [...v].sort((x, y) => x - y), n = s.length;
    return n % 2 ? s[(n - 1) / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

async function main() {
    const a = parseArgs(process.argv.slice(2));
    const pkg = path.join(a.ort, "node_modules", "onnxruntime-node");
    if (!fs.existsSync(pkg))
        fail(pkg + " is missing: run bench/setup_ort.sh (or give --ort DIR)");
    const ort = require(pkg);
    if (!fs.existsSync(a.model))
        fail(a.model + ": no such file");

    const t0 = process.hrtime.bigint();
    let session;
    try {
        session = await ort.InferenceSession.create(a.model, {
            intraOpNumThreads: a.threads, interOpNumThreads: 1, graphOptimizationLevel: "all"});
    } catch (e) {
        fail(a.model + ": ONNX Runtime cannot load it: " + e.message);
    }
    const createMs = Number(process.hrtime.bigint() - t0) / 1e6;

    const feeds = {};
    for (const [name, file] of a.inputs) {
        if (!session.inputNames.includes(name))
            fail("--input " + name + ": the model's inputs are " + session.inputNames.join(", "));
        const x = readNpy(file);
        feeds[name] = new ort.Tensor(x.type, x.data, x.dims);
    }
    for (const name of session.inputNames)
        if (!(name in feeds))
            fail("the model's input '" + name + "' has no --input " + name + "=FILE.npy");

    const run = async () => {
        try {
            return await session.run(feeds);
        } catch (e) {
            fail(a.model + ": run failed: " + e.message);
        }
    };
    const first = await run();
    const outputs = {};
    for (const name of session.outputNames) {
        outputs[name] = first[name].dims;
        if (a.outputDir)
            writeNpyF32(path.join(a.outputDir, name + ".npy"), first[name].dims, first[name].data);
    }
    for (let i = 0; i < 2; i++)
        await run();
    let s = process.hrtime.bigint();
    await run();
    const estUs = Number(process.hrtime.bigint() - s) / 1e3;
    const n = a.runs || Math.max(5, Math.min(2000, Math.round(a.budget * 1e6 / Math.max(estUs, 1))));
    const ts = [];
    for (let i = 0; i < n; i++) {
        s = process.hrtime.bigint();
        await run();
        ts.push(Number(process.hrtime.bigint() - s) / 1e3);
    }
    await session.release();
    console.log(JSON.stringify({runs: n, median_us: median(ts), min_us: Math.min(...ts),
                                max_us: Math.max(...ts), create_ms: createMs, outputs,
                                ort: ort.env.versions.node}));
}

main().catch(e => fail(e.stack || String(e)));
