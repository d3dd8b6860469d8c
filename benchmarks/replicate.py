"""The repository's own records, replicated to N records with consistent renames, for benchmarks (and tests).

    python benchmarks/replicate.py OUT_DIR --records 10000

Copy k of the corpus renames every record id `x` to `x-c<k>` everywhere it is named (file names,
ids, typed references, `dir/id` links, wikilinks), its `name:` gets " (copy k)" and a source's URL a
query parameter, so copies are neither near-duplicates nor the same document to the checker. Copy 0
is the repository as it is. Bodies, cost blocks, for_each tables and inline values are the real ones,
so the work per record is the repository's, not a generator's. Whole copies only: N is rounded to a
multiple of the repository's record count, so no reference is left dangling.
"""

from __future__ import annotations

import argparse
import re
import shutil
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parent.parent
URL = re.compile(r"(https?://[^\s)\]>\"']+)")
NAME = re.compile(r"(?m)^name: (['\"]?)(.*?)\1[ \t]*$")
SOURCE_URL = re.compile(r"(?m)^(url: )(https?://\S+?)[ \t]*$")


def copied_url(url: str, k: int) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + f"/kbcopy-{k}"))


def replicate(out: Path, records: int, source: Path = REPO) -> int:
    """Write the replicated corpus to `out`; the number of records written."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(source / "schema", out / "schema")
    shutil.copytree(source / "site" / "templates", out / "site" / "templates")  # the theme overrides
    files = sorted((source / "records").glob("*/*.md"))
    texts = {path: path.read_text(encoding="utf-8") for path in files}
    # an id that is also a word of a schema's enum (an interconnect's kind) is renamed only where it is
    # surely an id: as dir/id, in a wikilink and on the record's own id line
    words = set(re.findall(r'"([a-z0-9-]+)"', "".join(p.read_text() for p in (source / "schema").glob("*.json"))))
    ids = sorted({path.stem for path in files}, key=len, reverse=True)
    plain, enum = [i for i in ids if i not in words], [i for i in ids if i in words]
    # an id as a whole token: not inside a longer id, a word or a file name's extension
    alternatives = "|".join(map(re.escape, plain))
    if enum:
        alternatives += r"|(?<=/|\[)(?:" + "|".join(map(re.escape, enum)) + ")"
    token = re.compile(r"(?<![A-Za-z0-9_.-])(" + alternatives + r")(?![A-Za-z0-9_-])")
    own_id = re.compile(r"(?m)^id: (\S+)[ \t]*$")
    copies = max(1, round(records / len(files)))
    for k in range(copies):
        for path, text in texts.items():
            if k:
                # ids are renamed outside URLs only: a repository's URL keeps its path
                text = "".join(
                    part if URL.fullmatch(part) else token.sub(lambda m, k=k: f"{m.group(1)}-c{k}", part)
                    for part in URL.split(text)
                )
                text = own_id.sub(lambda m, k=k: f"id: {m[1].removesuffix(f'-c{k}')}-c{k}", text, count=1)
                text = NAME.sub(lambda m, k=k: f"name: {m[1]}{m[2]} (copy {k}){m[1]}", text, count=1)
                # another document for the near-duplicate check, still inside the repository it names
                text = SOURCE_URL.sub(lambda m, k=k: f"{m[1]}{copied_url(m[2], k)}", text, count=1)
            target = out / "records" / path.parent.name / (path.stem + (f"-c{k}" if k else "") + ".md")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    return copies * len(files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()
    print(f"wrote {replicate(args.out, args.records)} records to {args.out}")


if __name__ == "__main__":
    main()
