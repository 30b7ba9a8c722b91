"""``get_extra_info`` names this server's transports answer beyond asyncio's own.

A module of its own so that both the TLS layer (``connection_buffers``) and the HTTP/2 streams
(``http2``), which the TLS layer starts, can name them without importing each other.
"""

from __future__ import annotations

# The client certificate's DER (None without one), made once per connection.
PEER_CERTIFICATE_DER = "peer_certificate_der"
# `write_small(data) -> bool`, for writers of many small chunks (watch events).
DIRECT_WRITE = "direct_write"
