"""The optional C decoder of W&B history records (`agentgrpo.doctor.readers._wirehistory`) against the reads it
speeds up: on generated run files (records made with wandb's own schema, framed by an independent LevelDB
writer), the bulk read with the decoder, the bulk read without it and the record-by-record read of wandb's
schema give the same rows, table, notes and config; every number it parses equals Python's ``float``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import random
import struct
from decimal import Decimal

import numpy as np
import pytest
from test_doctor_readers_trackers import _leveldb_log

from agentgrpo.doctor.readers import fasthistory, wandbrun

pytestmark = pytest.mark.skipif(importlib.util.find_spec("wandb") is None, reason="wandb not installed")
native = pytest.mark.skipif(fasthistory._wirehistory is None, reason="the C decoder is not built (setup.py)")
KEYS = ["train/reward", "train/kl", "_runtime", "_timestamp", "k" * 150, "train/global_step", "ü/é"]


def _value(rng: random.Random) -> str:
    """A logged value's JSON text: mostly numbers as json.dumps writes them, sometimes anything else."""
    r = rng.random()
    if r < 0.5:
        return json.dumps(rng.uniform(-5, 5))
    if r < 0.7:
        return json.dumps(rng.choice([rng.randint(-1000, 1000), rng.randint(-(10**20), 10**20), 0]))
    if r < 0.8:
        return rng.choice(["NaN", "Infinity", "-Infinity", "-0", "-0.0", "1e400", "1E-5", "2.5e+3", "0.1"])
    return rng.choice(['"text"', "true", "null", "[1, 2]", '{"a": 1}', " 1.5", '"NaN"', '"' + "y" * 200 + '"'])


def _run_file(tmp_path, seed: int, odd: float):
    """A .wandb file of generated history records (and a config record); ``odd``: the share of records
    with something the bulk reads do not cover (a repeated key, a two-part nested key, no step)."""
    pb = wandbrun._schema()
    rng = random.Random(seed)
    nested = seed % 3 == 0
    payloads = []
    config = pb.Record(num=1)
    item = config.config.update.add(key="max_completion_length", value_json='{"value": 128}')
    payloads.append(config.SerializeToString())
    step = 0
    for num in range(2, rng.randint(3, 200)):
        step += rng.choice([1, 1, 2, 129])
        record = pb.Record(num=num)
        keys = [k for k in KEYS if rng.random() < 0.7]
        if rng.random() < odd:
            keys.append(rng.choice(keys or KEYS))
        texts = [_value(rng) if rng.random() > odd else "nan" for _ in keys]
        if not odd or rng.random() < 0.7:  # wandb logs `_step` in each record
            keys, texts = keys + ["_step"], texts + [str(step if not odd else rng.choice([step, -1]))]
        for key, text in zip(keys, texts):
            item = record.history.item.add(value_json=text)
            if nested:
                item.nested_key.append(key)
                if rng.random() < odd:
                    item.nested_key.append("more")
            else:
                item.key = key
        if rng.random() >= odd / 4:
            record.history.step.num = step
        payloads.append(record.SerializeToString())
    path = tmp_path / f"run-{seed}.wandb"
    path.write_bytes(_leveldb_log(payloads))
    return path


def _rows(found) -> list[dict]:
    return found.records() if isinstance(found, fasthistory.ColumnBlock) else found


@native
@pytest.mark.parametrize("seed", range(12))
def test_the_c_decoder_reads_as_the_python_reads(tmp_path, seed, monkeypatch):
    path = _run_file(tmp_path, seed, odd=0.0 if seed % 2 else 0.03)
    decoded, decode = [], fasthistory._decoded
    monkeypatch.setattr(fasthistory, "_decoded", lambda *args: decoded.append(decode(*args)) or decoded[-1])
    fast = wandbrun.read_wandb(path)
    if seed % 2:  # plain records (non-numeric values among them): the C decoder read them
        assert decoded and isinstance(decoded[0], fasthistory.ColumnBlock)
    slow = wandbrun.read_wandb(path, bulk=False)
    monkeypatch.setattr(fasthistory, "_wirehistory", None)
    python = wandbrun.read_wandb(path)
    assert fast[1:] == slow[1:] == python[1:]
    assert repr(_rows(fast[0])) == repr(_rows(slow[0])) == repr(_rows(python[0]))
    assert isinstance(fast[0], fasthistory.ColumnBlock) == isinstance(python[0], fasthistory.ColumnBlock)
    if isinstance(fast[0], fasthistory.ColumnBlock):
        a, b = fast[0], python[0]
        assert a.header == b.header and a.widest == b.widest
        assert np.array_equal(a.numbers, b.numbers, equal_nan=True)
        assert np.array_equal(np.signbit(a.numbers), np.signbit(b.numbers))  # -0.0 logged, 0 for "-0"
        assert a.logged_nan.keys() == b.logged_nan.keys()
        assert all(np.array_equal(a.logged_nan[k], b.logged_nan[k]) for k in a.logged_nan)


def _texts(rng: random.Random, n: int) -> list[bytes]:
    """Numbers in JSON: Python's repr of uniform and of arbitrary doubles, decimals of up to 22 digits with
    exponents, and exact midpoints between two doubles (where one rounding must decide)."""
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.3:
            text = repr(rng.uniform(-1e3, 1e3))
        elif r < 0.5:
            value = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            text = repr(value) if math.isfinite(value) else "0.5"
        elif r < 0.8:
            digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 22)))
            whole = str(rng.randint(0, 10 ** rng.randint(0, 5)))
            text = rng.choice(["", "-"]) + whole + "." + digits + rng.choice(["", f"e{rng.randint(-40, 40)}", "E+7"])
        else:
            odd = rng.getrandbits(53) | (1 << 53)
            text = format(Decimal(2 * odd + 1) / Decimal(2) ** rng.randint(1, 60), "f")
        out.append(text.encode())
    return out


@native
@pytest.mark.parametrize("seed", range(3))
def test_the_c_decoder_parses_numbers_as_python_does(seed):
    texts = [t for t in _texts(random.Random(seed), 20000) if len(t) < 128]
    body = bytearray()
    for text in texts:
        item = b"\x0a\x01k\x82\x01" + bytes([len(text)]) + text
        body += b"\x0a" + bytes([len(item)]) + item
    body += b"\x12\x02\x08\x05"
    found = fasthistory._wirehistory.history(bytes(body), np.array([0, len(body)], dtype=np.int64))
    names, _, cells, kinds, others, counts, steps = found
    assert names == ["k"] and others == [] and counts == struct.pack("<q", len(texts))
    assert steps == struct.pack("<q", 5)
    cells, kinds = np.frombuffer(cells), np.frombuffer(kinds, dtype=np.uint8)
    expected = [json.loads(t) for t in texts]
    assert kinds.tolist() == [0 if isinstance(v, int) and abs(v) < 10**15 else 1 for v in expected]
    assert struct.pack(f"<{len(texts)}d", *map(float, expected)) == cells.tobytes()


def test_the_c_decoder_is_used_only_when_built_from_its_source(monkeypatch):
    """CI (AGENTGRPO_REQUIRE_NATIVE, set where a C compiler is present) requires the build; a build older
    than the source beside it (its SHA-256 differs) is left unused."""
    if os.environ.get("AGENTGRPO_REQUIRE_NATIVE"):
        assert fasthistory._wirehistory is not None, "setup.py did not build agentgrpo.doctor.readers._wirehistory"
    if fasthistory._wirehistory is None:
        pytest.skip("the C decoder is not built (setup.py)")
    assert fasthistory._extension() is fasthistory._wirehistory
    monkeypatch.setattr(fasthistory._wirehistory, "SOURCE_SHA256", "0" * 64)
    assert fasthistory._extension() is None


@native
@pytest.mark.parametrize("seed", range(10))
def test_the_c_framing_walk_equals_the_numpy_walk(seed, monkeypatch):
    """Files of the independent LevelDB writer (records crossing blocks), whole, cut at random places and
    with a flipped byte: the C walk gives the numpy walk's chunks, or None where it gives None."""
    from agentgrpo.doctor.readers import wandbframes

    rng = random.Random(seed)
    sizes = [rng.choice([0, 1, 6, 7, 100, 32760, 32761, 40000, 70000]) for _ in range(rng.randint(1, 14))]
    data = _leveldb_log([rng.randbytes(n) for n in sizes])
    blobs = [data, data[: rng.randint(7, len(data))], data[: rng.randint(7, len(data))]]
    flipped = bytearray(data)
    flipped[rng.randrange(7, len(data))] ^= 1 << rng.randrange(8)
    blobs += [bytes(flipped), data + bytes(rng.randint(1, 40))]
    for blob in blobs:
        fast = wandbframes.chunks(blob)
        with monkeypatch.context() as patch:
            patch.setattr(fasthistory, "_wirehistory", None)
            numpy_walk = wandbframes.chunks(blob)
        assert (fast is None) == (numpy_walk is None)
        if fast is not None:
            assert all(np.array_equal(a, b) for a, b in zip(fast, numpy_walk))
    assert wandbframes.chunks(data) is not None
