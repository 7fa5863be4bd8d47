"""Every relative Markdown link in README.md and docs/ resolves: ``[text](path)`` and
``[text](path#anchor)`` name an existing file or directory relative to the linking file
(anchors are not checked, only the file part), and none leaves the repository. Links to
http(s), mailto and other schemes, and text in code (fenced blocks, inline code spans),
are not links. The docs' Python API page, moved out of the README, names only
``pace_cert``'s top-level API, as the README's Python section must
(``tests/test_api.py``)."""

from __future__ import annotations

import re
from pathlib import Path

import pace_cert

ROOT = Path(__file__).resolve().parents[1]

_FENCE = re.compile(r"^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)(?:.|\n)*?\1")
_INLINE = re.compile(r"\]\(\s*<?([^()\s<>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.M)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def markdown_files(root: Path = ROOT) -> list[Path]:
    """README.md and every Markdown file under docs/."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def link_targets(text: str) -> list[str]:
    """The targets of the inline and reference links in Markdown ``text``, code left out."""
    text = _CODE_SPAN.sub("", _FENCE.sub("", text))
    return _INLINE.findall(text) + _REFERENCE.findall(text)


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """The relative links of the Markdown file ``path`` that do not resolve to an existing
    file or directory inside ``root``, each as ``path: target (why)``."""
    broken = []
    for target in link_targets(path.read_text(encoding="utf-8")):
        if not target or target.startswith("#") or _SCHEME.match(target):
            continue  # an anchor in the same file, or http(s), mailto, ...
        file_part = target.split("#", 1)[0].split("?", 1)[0]
        resolved = (path.parent / file_part).resolve()
        rel = path.relative_to(root)
        if not resolved.is_relative_to(root.resolve()):
            broken.append(f"{rel}: {target} (outside the repository)")
        elif not resolved.exists():
            broken.append(f"{rel}: {target} (no such file)")
    return broken


def test_every_relative_link_resolves():
    files = markdown_files()
    assert len(files) > 1 and all(f.exists() for f in files)
    broken = [b for f in files for b in broken_links(f)]
    assert not broken, "\n".join(broken)


def test_readme_links_into_docs():
    """The README is the way in: it links the docs pages, and nothing outside the repo."""
    targets = link_targets((ROOT / "README.md").read_text(encoding="utf-8"))
    linked = {t.split("#", 1)[0] for t in targets}
    for page in ("models", "compress", "verify", "frontier", "one-tree", "ray", "ci"):
        assert f"docs/{page}.md" in linked, page
    assert not any(t.startswith(("..", "/")) for t in targets), targets


def test_the_checker_finds_broken_links(tmp_path):
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / "there.md").write_text("# there\n")
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "[ok](there.md) [ok anchor](there.md#there) [dir](sub/) [self](#top)\n"
        "[web](https://example.org/x.md) [mail](mailto:a@b.c)\n"
        "[gone](missing.md#a) [wrong dir](../there.md)\n"
        "[out](../../elsewhere.md) [ref]\n\n[ref]: nothere.md\n"
        "`[code](nope.md)`\n```\n[fenced](nope2.md)\n```\n"
        '[split\ntext](there.md "title")\n'
    )
    (tmp_path / "README.md").write_text("[fine](docs/there.md)\n")
    assert broken_links(tmp_path / "README.md", tmp_path) == []
    assert broken_links(page, tmp_path) == [
        "docs/page.md: missing.md#a (no such file)",
        "docs/page.md: ../there.md (no such file)",
        "docs/page.md: ../../elsewhere.md (outside the repository)",
        "docs/page.md: nothere.md (no such file)",
    ]


def test_python_api_page_uses_only_top_level_names():
    """docs/python-api.md, like the README's Python section, names only names in
    ``pace_cert.__all__`` and no internal module path."""
    text = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    names = set(re.findall(r"\bpace_cert\.(\w+)", text))
    assert names and names <= set(pace_cert.__all__), names - set(pace_cert.__all__)
    assert not re.search(r"\bpace_cert\.\w+\.\w", text)
