"""Micro-batching: texts from concurrent callers embedded together, on threads of their own.

A ``BatchingRunner`` keeps one queue of texts waiting and ``threads`` threads. Each thread takes
what is waiting (up to ``take`` texts, oldest first), whoever sent it, embeds it in one call of
a blocking ``embed`` function (which may split it into several model runs), and hands every
caller its rows. Calls that arrive while a run goes on are embedded together in the next one:
under load the model runs bigger batches instead of many single texts, and the event loop only
queues texts and receives vectors.

A model whose vector of a text depends on the other texts of its batch must not be used this
way; the local graphs quantize each token on their own for this reason
(``quantized_layers.quantized_rows``).

A runner whose work can wait (stored texts, embedded behind the replies) runs its threads at
a lower scheduling priority (``nice``): the serving thread and the query thread then take a
core the moment they need one instead of sharing it with a run already under way, and the
runner still has every cycle they leave (decisions.md, Embedder).
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentcore.services.ports import Vectors

EmbedTexts = Callable[[list[str]], Vectors]
log = logging.getLogger(__name__)


@dataclass(eq=False, slots=True)
class _Call:
    texts: list[str]
    rows: Vectors
    future: asyncio.Future[Vectors]
    loop: asyncio.AbstractEventLoop
    remaining: int = field(init=False)

    def __post_init__(self) -> None:
        self.remaining = len(self.texts)


class BatchingRunner:
    def __init__(
        self,
        embed: EmbedTexts,
        dimension: int,
        *,
        threads: int,
        take: int,
        name: str,
        nice: int = 0,
    ) -> None:
        """``nice``: how much lower than the process's the threads' scheduling priority is
        (Linux's nice increment; 0 keeps the process's)."""
        if threads < 1 or take < 1:
            raise ValueError("a batching runner needs at least one thread and one text a run")
        self._embed = embed
        self._nice = nice
        self._dimension = dimension
        self._take = take
        self._waiting: deque[tuple[_Call, int]] = deque()  # (call, index of one of its texts)
        self._ready = threading.Condition()
        self._closing = False
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}_{n}", daemon=True)
            for n in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    async def run(self, texts: list[str]) -> Vectors:
        """One row per text, in order, once every text has been embedded."""
        if not texts:
            return np.zeros((0, self._dimension), dtype=np.float32)
        loop = asyncio.get_running_loop()
        rows = np.empty((len(texts), self._dimension), dtype=np.float32)
        call = _Call(texts, rows, loop.create_future(), loop)
        with self._ready:
            if self._closing:
                raise RuntimeError("the embedder is closed")
            self._waiting.extend((call, index) for index in range(len(texts)))
            self._ready.notify()
        return await call.future

    async def close(self) -> None:
        """Embed what is already waiting, then stop the threads (without blocking the loop)."""
        with self._ready:
            self._closing = True
            self._ready.notify_all()
        for thread in self._threads:
            await asyncio.to_thread(thread.join)

    def _work(self) -> None:
        if self._nice:
            _lower_priority(self._nice)
        while True:
            with self._ready:
                while not self._waiting and not self._closing:
                    self._ready.wait()
                if not self._waiting:
                    return  # closing, and nothing is left
                taken = [
                    self._waiting.popleft() for _ in range(min(self._take, len(self._waiting)))
                ]
                if self._waiting:
                    self._ready.notify()  # another thread can take the rest at once
            try:
                vectors = self._embed([call.texts[index] for call, index in taken])
            except Exception as exc:  # each caller gets the failure (EmbeddingFailed)
                for call in dict.fromkeys(call for call, _ in taken):
                    _answer(call, _fail, exc)
                continue
            finished = []
            with self._ready:
                for (call, index), vector in zip(taken, vectors, strict=True):
                    call.rows[index] = vector
                    call.remaining -= 1
                    if call.remaining == 0:
                        finished.append(call)
            for call in finished:
                _answer(call, _succeed, call.rows)


def _lower_priority(increment: int) -> None:
    """Lower the calling thread's priority (on Linux a thread is scheduled on its own)."""
    try:
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, os.getpriority(os.PRIO_PROCESS, thread) + increment)
    except (AttributeError, OSError):  # no per-thread priorities here: the same priority
        log.debug("thread priority not lowered", exc_info=True)


def _answer(
    call: _Call, answer: Callable[[asyncio.Future[Vectors], Any], None], value: Any
) -> None:
    """Hand a caller its outcome on its own loop; a loop closed meanwhile has no caller left."""
    try:
        call.loop.call_soon_threadsafe(answer, call.future, value)
    except RuntimeError:  # "Event loop is closed"
        log.debug("an embedding finished after its caller's event loop closed")


def _succeed(future: asyncio.Future[Vectors], rows: Vectors) -> None:
    if not future.done():  # a caller that was cancelled no longer waits
        future.set_result(rows)


def _fail(future: asyncio.Future[Vectors], exc: Exception) -> None:
    if not future.done():
        future.set_exception(exc)
