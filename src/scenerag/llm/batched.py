"""Several replies to one prompt, decoded together on one llama.cpp context (local models only).

The prompt is evaluated once; its KV cells are shared by ``n`` sequences (a unified KV cache:
``llama_memory_seq_cp`` adds a sequence to the cells, it does not copy them), and each decoding step
evaluates one token of every live sequence in a single batch — on a CPU the weights are read once per step
for all of them, so ``n`` replies cost far less than ``n`` calls. Sequence 0 is greedy, the others sample.

A GBNF grammar constrains every sequence (one grammar sampler each). It is applied lazily: the best token
(or the top-k when sampling) is checked first and the whole vocabulary only when none of them fits, so a
constraint costs almost nothing while the model already writes what the grammar allows.

KV reuse is deterministic: the system turn (``boundary`` tokens) is always evaluated on its own — or
restored from its saved state (memory, then ``~/.cache/scenerag/kv``) — and the rest of a prompt is
evaluated from that boundary, unless the prompt extends the previous prompt whole (a correction in the same
conversation). A reply therefore never depends on which questions ran before it.
"""

from __future__ import annotations

import ctypes
import hashlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["BatchedDecoder", "Completion"]

_TOP_K = 40  # candidates considered when sampling
_TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)
_GREEDY_PROBE = 64  # candidates checked against the grammar before the whole vocabulary


@dataclass
class Completion:
    """One decoded sequence."""

    text: str
    tokens: list[int]
    finish_reason: str  # "stop" (end of turn, grammar complete or a stop string) or "length"


@dataclass
class DecodeStats:
    prompt_tokens: int = 0  # tokens of the prompt
    prompt_evaluated: int = 0  # of which evaluated now (the rest came from the cache)
    prompt_s: float = 0.0
    generated: int = 0
    generate_s: float = 0.0
    steps: int = 0


class BatchedDecoder:
    """A llama.cpp context with ``n_seq`` sequences over a loaded model (``llama``: a ``llama_cpp.Llama``
    whose weights and vocabulary are shared). Not thread-safe: callers hold the model's lock."""

    def __init__(self, llama: Any, *, n_ctx: int, n_threads: int, n_seq: int = 4, n_batch: int = 512) -> None:
        import llama_cpp

        self._lib = llama_cpp
        self.model = llama._model.model
        self.vocab = llama._model.vocab
        self.n_vocab = int(llama_cpp.llama_vocab_n_tokens(self.vocab))
        self.n_seq = n_seq
        self.n_batch = n_batch
        params = llama_cpp.llama_context_default_params()
        params.n_ctx = n_ctx
        params.n_batch = n_batch
        params.n_ubatch = n_batch
        params.n_seq_max = n_seq
        params.kv_unified = True
        params.n_threads = n_threads
        params.n_threads_batch = n_threads
        ctx = llama_cpp.llama_init_from_model(self.model, params)
        if not ctx:
            raise RuntimeError(
                f"llama.cpp could not create a context of {n_ctx} tokens for {n_seq} sequences"
            )
        self.ctx = ctx
        self.mem = llama_cpp.llama_get_memory(ctx)
        self.n_ctx = n_ctx
        self._batch = llama_cpp.llama_batch_init(n_batch, 0, n_seq)
        self._cached: list[int] = []  # tokens seq 0 holds (the last prompt)
        self._cached_logits: np.ndarray | None = None
        self._prefix_states: dict[str, bytes] = {}
        self._grammars: dict[str, Any] = {}
        self._piece = ctypes.create_string_buffer(256)
        self._state_key = ""
        self.stats = DecodeStats()

    def close(self) -> None:
        lib = self._lib
        for smpl in self._grammars.values():
            lib.llama_sampler_free(smpl)
        self._grammars.clear()
        if self.ctx:
            lib.llama_batch_free(self._batch)
            lib.llama_free(self.ctx)
            self.ctx = None

    # -- grammar -------------------------------------------------------------------------------------------
    def grammar_sampler(self, text: str) -> Any:
        """A fresh grammar sampler for GBNF ``text`` (the parsed grammar is kept and cloned)."""
        lib = self._lib
        base = self._grammars.get(text)
        if base is None:
            base = lib.llama_sampler_init_grammar(self.vocab, text.encode(), b"root")
            if not base:
                raise ValueError("llama.cpp rejected the grammar (see its log for the rule)")
            if len(self._grammars) > 64:  # per-question grammars: keep the cache small
                for old in list(self._grammars)[:32]:
                    lib.llama_sampler_free(self._grammars.pop(old))
            self._grammars[text] = base
        return lib.llama_sampler_clone(base)

    def _allowed(self, smpl: Any, ids: np.ndarray, logits: np.ndarray) -> np.ndarray:
        """Which of ``ids`` the grammar sampler ``smpl`` allows next (a boolean mask, in the order of ``ids``)."""
        lib = self._lib
        data = np.zeros(len(ids), dtype=_TOKEN_DATA)
        data["id"] = ids
        data["logit"] = logits
        arr = lib.llama_token_data_array(
            data.ctypes.data_as(ctypes.POINTER(lib.llama_token_data)), len(ids), -1, False
        )
        lib.llama_sampler_apply(smpl, ctypes.byref(arr))
        kept = data[: arr.size]
        allowed = set(kept["id"][np.isfinite(kept["logit"])].tolist())
        return np.fromiter((int(t) in allowed for t in ids), dtype=bool, count=len(ids))

    def _pick(
        self, logits: np.ndarray, smpl: Any | None, temperature: float, rng: np.random.Generator
    ) -> int:
        if temperature <= 0:
            if smpl is None:
                return int(np.argmax(logits))
            probe = np.argpartition(-logits, _GREEDY_PROBE)[:_GREEDY_PROBE]
            probe = probe[np.argsort(-logits[probe])]
            ok = self._allowed(smpl, probe[:1], logits[probe[:1]])
            if ok[0]:
                return int(probe[0])
            ok = self._allowed(smpl, probe, logits[probe])
            if ok.any():
                return int(probe[np.argmax(ok)])
            ids = np.arange(self.n_vocab, dtype=np.int32)
            ok = self._allowed(smpl, ids, logits)
            if not ok.any():
                raise RuntimeError("the grammar allows no token here")
            masked = np.where(ok, logits, -np.inf)
            return int(np.argmax(masked))
        top = np.argpartition(-logits, _TOP_K)[:_TOP_K]
        if smpl is not None:
            ok = self._allowed(smpl, top, logits[top])
            if not ok.any():
                ids = np.arange(self.n_vocab, dtype=np.int32)
                ok_all = self._allowed(smpl, ids, logits)
                if not ok_all.any():
                    raise RuntimeError("the grammar allows no token here")
                allowed = ids[ok_all]
                top = allowed[np.argsort(-logits[allowed])[:_TOP_K]]
            else:
                top = top[ok]
        z = logits[top].astype(np.float64) / temperature
        p = np.exp(z - z.max())
        p /= p.sum()
        return int(rng.choice(top, p=p))

    # -- KV cache ------------------------------------------------------------------------------------------
    def _decode(self, tokens: Sequence[int], start: int, seqs: Sequence[int]) -> None:
        """Evaluate ``tokens`` at positions ``start``.. into every sequence of ``seqs``; logits of the last one."""
        lib, batch = self._lib, self._batch
        for off in range(0, len(tokens), self.n_batch):
            chunk = tokens[off : off + self.n_batch]
            batch.n_tokens = len(chunk)
            for i, tok in enumerate(chunk):
                batch.token[i] = tok
                batch.pos[i] = start + off + i
                batch.n_seq_id[i] = len(seqs)
                for j, s in enumerate(seqs):
                    batch.seq_id[i][j] = s
                batch.logits[i] = 1 if off + i == len(tokens) - 1 else 0
            rc = lib.llama_decode(self.ctx, batch)
            if rc != 0:
                raise RuntimeError(f"llama_decode failed ({rc}): the prompt may not fit the context")

    def _logits(self, i: int) -> np.ndarray:
        ptr = self._lib.llama_get_logits_ith(self.ctx, i)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    def set_state_key(self, key: str) -> None:
        """What identifies the model for saved prefix states on disk (path, size, context, versions)."""
        self._state_key = key

    def _state_file(self, prefix: Sequence[int]) -> Path | None:
        if not self._state_key:
            return None
        from scenerag.llm.model_files import cache_dir

        digest = hashlib.sha256(f"{self._state_key}|batched|{list(prefix)}".encode()).hexdigest()[:32]
        return cache_dir() / "kv" / f"{digest}.seq.bin"

    def _load_prefix(self, prefix: list[int]) -> bool:
        """Restore seq 0 to hold exactly ``prefix`` from a saved state; False when none is saved."""
        lib = self._lib
        key = hashlib.sha256(str(prefix).encode()).hexdigest()
        data = self._prefix_states.get(key)
        file = self._state_file(prefix)
        if data is None and file is not None and file.exists():
            data = file.read_bytes()
            self._prefix_states[key] = data
        if data is None:
            return False
        lib.llama_memory_clear(self.mem, True)
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        if lib.llama_state_seq_set_data(self.ctx, buf, len(data), 0) == 0:
            lib.llama_memory_clear(self.mem, True)
            return False
        return True

    def _save_prefix(self, prefix: list[int]) -> None:
        lib = self._lib
        key = hashlib.sha256(str(prefix).encode()).hexdigest()
        size = lib.llama_state_seq_get_size(self.ctx, 0)
        buf = (ctypes.c_uint8 * size)()
        written = lib.llama_state_seq_get_data(self.ctx, buf, size, 0)
        data = bytes(buf[:written])
        self._prefix_states[key] = data
        file = self._state_file(prefix)
        if file is not None:
            try:
                file.parent.mkdir(parents=True, exist_ok=True)
                tmp = file.with_suffix(".tmp")
                tmp.write_bytes(data)
                tmp.replace(file)
            except OSError:
                pass  # a read-only cache only costs the next process the prefix's evaluation

    def _prepare(self, prompt: list[int], boundary: int) -> np.ndarray:
        """Make seq 0 hold ``prompt`` (reusing what may be reused) and return the logits after it."""
        lib = self._lib
        cached = self._cached
        for s in range(1, self.n_seq):
            lib.llama_memory_seq_rm(self.mem, s, -1, -1)
        if cached and prompt == cached and self._cached_logits is not None:
            self.stats.prompt_evaluated = 0
            return self._cached_logits
        boundary = max(0, min(boundary, len(prompt) - 1))
        if cached and len(prompt) > len(cached) and prompt[: len(cached)] == cached:
            keep = len(cached)  # the same conversation, continued
        elif boundary and (cached[:boundary] == prompt[:boundary] or self._load_prefix(prompt[:boundary])):
            keep = boundary
        else:
            lib.llama_memory_clear(self.mem, True)
            keep = 0
            if boundary:
                self._decode(prompt[:boundary], 0, [0])
                self._save_prefix(prompt[:boundary])
                keep = boundary
        lib.llama_memory_seq_rm(self.mem, 0, keep, -1)
        self._cached = []
        self._decode(prompt[keep:], keep, [0])
        self.stats.prompt_evaluated = len(prompt) - keep
        self._cached = list(prompt)
        self._cached_logits = self._logits(-1).copy()
        return self._cached_logits

    # -- generation ------------------------------------------------------------------------------------------
    def generate(
        self,
        prompt: list[int],
        *,
        n: int = 1,
        boundary: int = 0,
        grammar: str | None = None,
        temperature: float = 0.7,
        seed: int = 0,
        max_tokens: int = 256,
        stop: Sequence[str] = (),
        greedy: bool = True,
    ) -> list[Completion]:
        """``n`` completions of ``prompt`` (token ids, the whole formatted conversation): the first greedy
        (unless ``greedy`` is False), the others sampled at ``temperature`` (seeds ``seed + i``). ``boundary``: how many leading tokens are the
        system turn (evaluated alone and cached). Stops at an end-of-turn token, a stop string, when the
        grammar is complete and the model ends, or at ``max_tokens``."""
        lib = self._lib
        if not 1 <= n <= self.n_seq:
            raise ValueError(f"n must be 1..{self.n_seq}")
        if len(prompt) + max_tokens >= self.n_ctx:
            raise ValueError(
                f"the prompt has {len(prompt)} tokens; with {max_tokens} to generate it exceeds {self.n_ctx}"
            )
        stats = self.stats = DecodeStats(prompt_tokens=len(prompt))
        t0 = time.perf_counter()
        base = self._prepare(prompt, boundary)
        stats.prompt_s = time.perf_counter() - t0
        for s in range(1, n):
            lib.llama_memory_seq_cp(self.mem, 0, s, -1, -1)
        samplers = [self.grammar_sampler(grammar) if grammar else None for _ in range(n)]
        rngs = [np.random.default_rng(seed + s) for s in range(n)]
        temps = ([0.0] if greedy else [temperature]) + [temperature] * (n - 1)
        out_tokens: list[list[int]] = [[] for _ in range(n)]
        texts: list[bytes] = [b"" for _ in range(n)]
        finish = ["length"] * n
        live = list(range(n))
        nxt = {s: self._pick(base, samplers[s], temps[s], rngs[s]) for s in live}
        pos = len(prompt)
        t1 = time.perf_counter()
        try:
            while live:
                still = []
                for s in live:
                    tok = nxt[s]
                    if lib.llama_vocab_is_eog(self.vocab, tok):
                        finish[s] = "stop"
                        continue
                    if samplers[s] is not None:
                        lib.llama_sampler_accept(samplers[s], tok)
                    out_tokens[s].append(tok)
                    texts[s] += self._token_text(tok)
                    cut = _stop_at(texts[s], stop)
                    if cut is not None:
                        texts[s] = texts[s][:cut]
                        finish[s] = "stop"
                        continue
                    if len(out_tokens[s]) >= max_tokens:
                        continue
                    still.append(s)
                live = still
                if not live:
                    break
                batch = self._batch
                batch.n_tokens = len(live)
                for i, s in enumerate(live):
                    batch.token[i] = nxt[s]
                    batch.pos[i] = pos
                    batch.n_seq_id[i] = 1
                    batch.seq_id[i][0] = s
                    batch.logits[i] = 1
                rc = lib.llama_decode(self.ctx, batch)
                if rc != 0:
                    raise RuntimeError(f"llama_decode failed ({rc}) while generating")
                stats.steps += 1
                pos += 1
                for i, s in enumerate(live):
                    nxt[s] = self._pick(self._logits(i), samplers[s], temps[s], rngs[s])
        finally:
            for smpl in samplers:
                if smpl is not None:
                    lib.llama_sampler_free(smpl)
            lib.llama_memory_seq_rm(self.mem, 0, len(prompt), -1)
            for s in range(1, n):
                lib.llama_memory_seq_rm(self.mem, s, -1, -1)
        stats.generate_s = time.perf_counter() - t1
        stats.generated = sum(len(t) for t in out_tokens)
        return [
            Completion(texts[s].decode("utf-8", errors="replace"), out_tokens[s], finish[s]) for s in range(n)
        ]

    def _token_text(self, tok: int) -> bytes:
        n = self._lib.llama_token_to_piece(self.vocab, tok, self._piece, len(self._piece), 0, False)
        return self._piece.raw[: max(0, n)]


def _stop_at(text: bytes, stop: Sequence[str]) -> int | None:
    cuts = [i for i in (text.find(s.encode()) for s in stop if s) if i >= 0]
    return min(cuts) if cuts else None
