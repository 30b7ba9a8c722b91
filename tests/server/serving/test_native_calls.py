"""What the server reaches through ctypes below Python's API: OpenSSL's SSL_CTX behind an
``ssl.SSLContext`` (``server.serving.curves``) and glibc's ``malloc_trim`` (``server.serving.heap_trim``).

Each fails when a Python or C library moves what the code reads, and each module's fallback (OpenSSL's
default groups; no trimming) is checked beside it.
"""

from __future__ import annotations

import asyncio
import platform
import ssl

import pytest

from server.serving import curves, heap_trim


def test_the_ssl_ctx_pointer_read_from_an_ssl_context_is_that_contexts() -> None:
    """PySSLContext keeps its ``SSL_CTX*`` first, right after the object header, and the libssl of
    ``_ssl`` exports the functions called on it; OpenSSL's options then follow Python's."""
    setter = curves._groups_setter()
    assert setter is not None, "ctypes finds no SSL_CTX_ctrl/SSL_CTX_get_options in _ssl's libssl"
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    pointer = curves._ssl_ctx_pointer(context)
    assert pointer
    before = setter.get_options(pointer)
    assert before == int(context.options)
    context.options ^= ssl.OP_NO_TICKET
    assert setter.get_options(pointer) == int(context.options) != before
    assert curves.apply_groups(context, "X25519:P-256")


def test_a_context_whose_options_disagree_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fallback: a pointer OpenSSL's view does not confirm is never written through."""
    setter = curves._groups_setter()
    assert setter is not None
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    other = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    other.options ^= ssl.OP_NO_TICKET
    read_pointer = curves._ssl_ctx_pointer
    monkeypatch.setattr(curves, "_ssl_ctx_pointer", lambda _: read_pointer(other))
    assert not setter.set(context, "P-256")


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_glibcs_malloc_trim_is_found_through_ctypes() -> None:
    assert heap_trim._MALLOC_TRIM is not None
    assert heap_trim._MALLOC_TRIM(0) in (0, 1)


async def test_without_malloc_trim_the_trimmer_does_nothing() -> None:
    trimmer = heap_trim.HeapTrimmer(after_events=1, delay=0.0, trim=None)
    assert not trimmer.available
    loop = asyncio.get_running_loop()
    for _ in range(10):
        trimmer.connection_changed(loop)
    assert not trimmer._scheduled
