"""The watch cache (kube's cacher): reads and watches served from memory kept current by storage watches.

`feed.GroupFeed` lists and watches one group's keys and routes each change to the `ResourceCache` of
its resource; `resource_cache.ResourceCache` answers GET, LIST and WATCH from its `index` and its
`window` of recent events; `stored.StoredObject` is what both hold: each object encoded once.
"""
