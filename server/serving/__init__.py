"""HTTPS serving material: generated certificates, the TLS context that reloads them, and kubeconfigs.

Every function here that touches the disk is synchronous on purpose: callers on the event loop run
them through ``asyncio.to_thread`` (``ReloadingTLS`` does so itself).
"""
