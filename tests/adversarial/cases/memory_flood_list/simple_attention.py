"""Attack: grow a module-level list forever at import, 64 MiB at a time, and keep it alive."""
HOG = []
while True:
    HOG.append(bytes(64 << 20))
