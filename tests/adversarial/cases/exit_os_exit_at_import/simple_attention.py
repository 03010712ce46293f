"""Attack: end the process at once (os._exit skips every handler) while the module is imported."""
import os

os._exit(0)
