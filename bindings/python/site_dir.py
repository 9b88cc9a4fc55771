"""Prints where `meson install` puts the gpk package, then the path of each library relative to it.

Arguments: prefix, meson's choice of directory, the installed libraries' absolute paths. Debian's Python
searches <prefix>/lib/python3.X/dist-packages under /usr/local, where Meson 1.0 picks
<prefix>/lib/python3/dist-packages; the directory under the prefix that this interpreter searches is taken
when there is one (outside virtual environments), else Meson's choice.
"""
import os
import sys

prefix, meson_choice, *libraries = (os.path.normpath(a) for a in sys.argv[1:])
chosen = meson_choice
if sys.prefix == sys.base_prefix:
    for entry in sys.path:
        entry = os.path.normpath(entry) if entry else ""
        if (os.path.basename(entry) in ("site-packages", "dist-packages") and os.path.isabs(entry)
                and os.path.commonpath([entry, prefix]) == prefix
                and os.path.relpath(entry, prefix).split(os.sep)[0] in ("lib", "lib64", "lib32")):
            chosen = entry
            break
print(chosen)
for library in libraries:
    print(os.path.relpath(library, os.path.join(chosen, "gpk")))
