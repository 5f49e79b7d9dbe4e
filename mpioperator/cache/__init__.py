"""client-go's informer machinery for one asyncio loop: store (indexed cache), reflector (list+watch),
informer (store, then notify handlers) and factory (one shared informer per resource and namespace)."""
