#!/usr/bin/env python3
"""A sysroot for cuda-gdb in which a process's huge libraries are symbol-light (issue 46).

  light_mirror.py PID DIR [MIB]

DIR mirrors the file system through links; a library mapped by PID larger than MIB (default 100)
is replaced there by `objcopy --strip-all`'s copy (.dynsym kept, .symtab gone), so that
`set sysroot DIR` makes the debugger's own shared-library load read the light copy. Directories on
the way to a light copy are real directories whose other entries are links: paths with `..` or
through a link (/lib -> usr/lib) resolve as on the real file system. Prints the light copies.
"""
import os
import subprocess
import sys


def main():
    pid, mirror = sys.argv[1], os.path.abspath(sys.argv[2])
    limit = int(sys.argv[3] if len(sys.argv) > 3 else 100) << 20
    os.makedirs(mirror, exist_ok=True)
    done = set()

    def link_entries_of(real_dir):
        if real_dir in done:
            return
        if real_dir != "/":
            link_entries_of(os.path.dirname(real_dir))
        mirrored = mirror + real_dir
        if os.path.islink(mirrored):
            os.unlink(mirrored)
        os.makedirs(mirrored, exist_ok=True)
        for entry in os.listdir(real_dir):
            real, link = os.path.join(real_dir, entry), os.path.join(mirrored, entry)
            if os.path.lexists(link):
                continue
            if os.path.islink(real):
                target = os.readlink(real)
                os.symlink(mirror + target if target.startswith("/") else target, link)
            else:
                os.symlink(real, link)
        done.add(real_dir)

    link_entries_of("/")
    libraries = set()
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].startswith("/") and ".so" in fields[5]:
                libraries.add(fields[5].strip())
    for library in sorted(libraries):
        if not os.path.isfile(library) or os.path.getsize(library) < limit:
            continue
        real = os.path.realpath(library)
        link_entries_of(os.path.dirname(real))
        light = mirror + real
        os.unlink(light)
        subprocess.run(["objcopy", "--strip-all", real, light], check=True)
        print(f"{real}: {os.path.getsize(real) >> 20} MiB -> {os.path.getsize(light) >> 20} MiB")


main()
