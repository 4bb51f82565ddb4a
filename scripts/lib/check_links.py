"""Checks the links of Markdown files: a relative link must name a file of
the tree and, with `#anchor`, one of its headings (as GitHub and mdBook
make heading ids); a link to this repository's pages on GitHub must name a
file of this tree; no chapter of the book may be left out of its
SUMMARY.md. Other web links are listed, not fetched (CI has no network
beyond the package registries).

usage: check_links.py FILE_OR_FOLDER...
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OWN_PAGES = re.compile(r"^https://github\.com/mcp-bridge/mcp-bridge/(?:blob|tree|edit)/main/(?P<path>[^#?]*)")
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\((?P<target>[^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(?P<text>.+?)\s*$")


def prose_lines(text: str, keep_code: bool = False):
    """The lines outside fenced code blocks, inline code removed unless
    KEEP_CODE (a link inside code is no link; a heading's code is text)."""
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line if keep_code else re.sub(r"`[^`]*`", "", line)


def slug(heading: str) -> str:
    """A heading's id: lower case, inline code and links reduced to their
    text, punctuation other than - and _ dropped, spaces made -."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path: Path) -> set:
    found = set()
    for _, line in prose_lines(path.read_text(), keep_code=True):
        match = HEADING.match(line) if line.startswith("#") else None
        if match:
            found.add(slug(match.group("text")))
    return found


def check(path: Path, problems: list, web: set) -> None:
    for number, line in prose_lines(path.read_text()):
        for match in LINK.finditer(line):
            target = match.group("target")
            where = f"{path.relative_to(ROOT)}:{number}: {target}"
            own = OWN_PAGES.match(target)
            if own:
                if not (ROOT / own.group("path")).exists():
                    problems.append(f"{where}: no such file in this tree")
                continue
            if re.match(r"^[a-z]+:", target):
                web.add(target)
                continue
            file_part, _, anchor = target.partition("#")
            linked = (path.parent / file_part).resolve() if file_part else path
            if not linked.exists():
                problems.append(f"{where}: no such file")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                problems.append(f"{where}: {linked.name} has no heading #{anchor}")


def book_problems(src: Path) -> list:
    summary = (src / "SUMMARY.md").read_text()
    listed = {m.group("target") for m in LINK.finditer(summary)}
    chapters = {p.relative_to(src).as_posix() for p in src.rglob("*.md")} - {"SUMMARY.md"}
    return [f"{src.relative_to(ROOT)}/{c}: not in SUMMARY.md" for c in sorted(chapters - listed)]


def main() -> None:
    files, problems, web = [], [], set()
    for argument in sys.argv[1:]:
        given = (ROOT / argument).resolve()
        if given.is_dir():
            files += sorted(given.rglob("*.md"))
            if (given / "SUMMARY.md").exists():
                problems += book_problems(given)
        else:
            files.append(given)
    for path in files:
        check(path, problems, web)
    if problems:
        sys.exit("check_links: broken links:\n  " + "\n  ".join(problems))
    print(f"check_links: {len(files)} files, every relative link and heading found; "
          f"{len(web)} web links not fetched")


if __name__ == "__main__":
    main()
