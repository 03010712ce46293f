"""Sabotage shipped as usercustomize.py next to correct modules: if the grader (or pytest) ever imports it,
it leaves a marker file and ends the importing process at once."""
import os

try:
    with open("@@MARKER@@", "a") as marker:
        marker.write("usercustomize.py ran\n")
finally:
    os._exit(13)
