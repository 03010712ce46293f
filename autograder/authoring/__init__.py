"""The student material made from the solutions: stubs (stubs), nbgrader notebooks (notebooks), and the
check that the solutions reproduce the book (book_check)."""
