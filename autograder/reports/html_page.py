"""What the HTML reports share: one self-contained page (no script, no request to anywhere).

Every text goes through esc() where it enters the page; the page's Content-Security-Policy
allows nothing but its own inline style and data: images, so even a slip in escaping could not
run a script or fetch a resource.
"""
import html

from autograder.reports.plots import data_uri

POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 60em;
       padding: 0 1em; color: #1f2328; line-height: 1.45; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; border-bottom: 1px solid #d0d7de; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #eaeef2; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.bar { background: #eaeef2; width: 10em; height: 0.8em; display: inline-block; }
.bar span { background: #3b75af; height: 100%; display: block; }
.fix { margin: 0.8em 0; padding: 0.6em 0.9em; border-left: 4px solid #cf222e; background: #fff8f8; }
.fix .check { font-family: ui-monospace, monospace; font-size: 0.9em; }
.picture { margin: 0.8em 0; padding: 0.6em 0.9em; border-left: 4px solid #3b75af; background: #f6f8fa; }
.pictures { display: flex; flex-wrap: wrap; gap: 1em; margin: 0.5em 0; }
figure { margin: 0; } figcaption { font-size: 0.85em; color: #57606a; text-align: center; }
.diagnosis { font-weight: 600; } .muted { color: #57606a; font-size: 0.9em; }
.ok { color: #1a7f37; font-weight: 600; }
.wide { overflow-x: auto; max-width: 100%; }
table.compact th, table.compact td { padding: 0.2em 0.45em; } table.compact { font-size: 0.9em; }
td.note { min-width: 14em; overflow-wrap: anywhere; }
.note { font-style: italic; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0);
                   white-space: nowrap; }
"""


def esc(value):
    """Any value as HTML text (quotes too, so it is safe in attributes as well)."""
    return html.escape(str(value), quote=True)


def page(title, body):
    """The whole document, in ASCII (other characters as references): the same bytes in any locale."""
    return (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta http-equiv="Content-Security-Policy" content="{esc(POLICY)}">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f'<title>{esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n'
            ).encode("ascii", "xmlcharrefreplace").decode("ascii")


def img(png, alt):
    return f'<img src="{data_uri(png)}" alt="{esc(alt)}">'


def bar(value, top):
    share = 0.0 if not top else max(0.0, min(1.0, float(value) / float(top)))
    # decorative: the score beside it says the same in text (colour never carries it alone)
    return (f'<span class="bar" aria-hidden="true" title="{share:.0%}">'
            f'<span style="width: {share * 100:.1f}%"></span></span>')
