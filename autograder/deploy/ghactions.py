"""What the `ci` command reads from and writes to a GitHub Actions job.

GitHub hands a step its context through files named by environment variables:

    GITHUB_EVENT_PATH    the webhook payload (JSON) that started the run: read for the PR number and commit
    GITHUB_STEP_SUMMARY  Markdown appended here is shown on the run's summary page
    GITHUB_OUTPUT        `name=value` lines appended here become the step's outputs

Everything in the payload can be chosen by whoever opened the pull request (titles, branch
names, ...), so only two fields are taken from it, and only when they look like what they claim
to be: the PR number (an integer) and a commit sha (40 hex digits).
"""
import json
import os
import re

# The pull-request comment is found again by this marker (an HTML comment is invisible when
# rendered). The workflow's comment step searches for the same string: keep the two in step.
COMMENT_MARKER = "<!-- ch03-autograder:grade-comment -->"
COMMENT_LIMIT = 60000  # GitHub refuses comment bodies over 65536 characters
SHA = re.compile(r"[0-9a-f]{40}")
def event_context(environ=None):
    """{'event', 'pr', 'sha'} from GITHUB_EVENT_NAME / GITHUB_EVENT_PATH / GITHUB_SHA; missing parts are None."""
    environ = os.environ if environ is None else environ
    context = {"event": environ.get("GITHUB_EVENT_NAME") or None, "pr": None, "sha": None}
    payload = {}
    path = environ.get("GITHUB_EVENT_PATH")
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                payload = json.load(f)
        except (OSError, ValueError):
            payload = {}
    if not isinstance(payload, dict):
        payload = {}
    pull = payload.get("pull_request")
    if isinstance(pull, dict):
        number = pull.get("number")
        if isinstance(number, int) and not isinstance(number, bool) and number > 0:
            context["pr"] = number
        head = pull.get("head")
        if isinstance(head, dict):
            context["sha"] = _sha(head.get("sha"))
    if context["sha"] is None:
        context["sha"] = _sha(payload.get("after")) or _sha(environ.get("GITHUB_SHA"))
    return context


def _sha(value):
    return value if isinstance(value, str) and SHA.fullmatch(value) else None


def comment_body(grade_markdown, context, protections=(), graded=True):
    """The pull-request comment: marker, the student's Markdown report (reports.markdown), what was
    graded (graded False: the run scored nobody, and the report says why)."""
    where = []
    if context.get("pr"):
        where.append(f"pull request #{context['pr']}")
    if context.get("sha"):
        where.append(f"commit {context['sha'][:12]}")
    lines = [COMMENT_MARKER, _quiet_mentions(grade_markdown).rstrip(), "", "---"]
    if graded:
        lines.append("Graded " + (", ".join(where) if where else "this run") + " with the course autograder. "
                     "The score counts every check, hidden ones included: of those, only what they found wrong "
                     "is shown, never their inputs.")
    else:
        lines.append("Not graded: " + (", ".join(where) if where else "this run") + ". Push again once your "
                     "instructor has fixed the autograder, or ask them to run it again.")
    if protections and not fully_sandboxed(protections):
        lines.append("")
        lines.append("Note: the sandbox ran with reduced protections on this runner.")
    body = "\n".join(lines) + "\n"
    if len(body) > COMMENT_LIMIT:
        body = body[:COMMENT_LIMIT] + "\n\n(report cut short: see the job summary and results.json)\n"
    return body


def _quiet_mentions(text):
    """'@name' in a message (it may quote the student's own exception text) must not notify anyone."""
    return re.sub(r"@(?=[A-Za-z0-9])", "@\u200b", text)


# what the sandbox reports (autograder/inside/isolation.py) when student code ran in its own
# namespaces under the system-call allow-list
NAMESPACES = "pid, mount, network, IPC and UTS namespaces"
SECCOMP = "seccomp system-call allow-list"


def fully_sandboxed(protections):
    """Whether every part ran in its namespaces under the seccomp filter (and not --unsafe-no-sandbox)."""
    return (NAMESPACES in protections and SECCOMP in protections
            and not any(p.startswith("NO SANDBOX") for p in protections))


def append(path, text):
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


def write_outputs(environ, **values):
    """Append name=value lines to $GITHUB_OUTPUT, if the variable is set; values are single-line."""
    path = environ.get("GITHUB_OUTPUT")
    if path:
        append(path, "".join(f"{name}={str(value).splitlines()[0] if str(value) else ''}\n"
                             for name, value in values.items()))


def write_summary(environ, markdown):
    path = environ.get("GITHUB_STEP_SUMMARY")
    if path:
        append(path, markdown if markdown.endswith("\n") else markdown + "\n")


def annotation(kind, message):
    """A workflow command that GitHub shows as an annotation (kind: notice, warning, error)."""
    message = message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return f"::{kind}::{message}"
