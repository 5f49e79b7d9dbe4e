"""glibc's allocator settings: this machine's C library is glibc, so both take effect."""

from __future__ import annotations

import subprocess
import sys

from mpioperator.app.malloc_tuning import release_free_memory


def test_arena_limit_is_taken_by_glibc_at_start_up() -> None:
    # In a process of its own: the limit stays for the life of the process that sets it.
    code = "from mpioperator.app.malloc_tuning import limit_arenas; print(limit_arenas())"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "True"


def test_memory_freed_by_a_large_parse_is_handed_back() -> None:
    # Many small blocks, as a parsed list body leaves behind: freed to the heap, not unmapped.
    blocks = [bytearray(4096) for _ in range(20_000)]
    del blocks
    assert release_free_memory()
