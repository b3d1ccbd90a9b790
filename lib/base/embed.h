/* SPDX-License-Identifier: MIT */
/* embed.h - files built or written as code (interpreter bootstraps, the template's helper and
 * init programs) carried inside the library: the assembler's .incbin puts a file's bytes in
 * .rodata between two hidden symbols, name and name_end. Paths are absolute, set by the build. */
#ifndef EB_EMBED_H
#define EB_EMBED_H

#define EB_EMBED_BEGIN_(name)                                                                      \
    ".section .rodata\n"                                                                           \
    ".balign 64\n"                                                                                 \
    ".hidden " #name "\n"                                                                          \
    ".global " #name "\n" #name ":\n"
#define EB_EMBED_END_(name)                                                                        \
    ".hidden " #name "_end\n"                                                                      \
    ".global " #name "_end\n" #name "_end:\n"                                                      \
    ".previous\n"

/* name[] .. name_end[]: the bytes of the file at path. */
#define EB_EMBED_FILE(name, path)                                                                  \
    __asm__(EB_EMBED_BEGIN_(name) ".incbin \"" path "\"\n" EB_EMBED_END_(name))

/* name[]: the text of the file at path, NUL-terminated. */
#define EB_EMBED_TEXT1(name, path)                                                                 \
    __asm__(EB_EMBED_BEGIN_(name) ".incbin \"" path "\"\n"                                         \
                                  ".byte 0\n" EB_EMBED_END_(name))

/* name[]: the text of the files at path1 and path2, one after the other, NUL-terminated. */
#define EB_EMBED_TEXT2(name, path1, path2)                                                         \
    __asm__(EB_EMBED_BEGIN_(name) ".incbin \"" path1 "\"\n"                                        \
                                  ".incbin \"" path2 "\"\n"                                        \
                                  ".byte 0\n" EB_EMBED_END_(name))

/* name[]: the text of the files at path1, path2 and path3, one after the other, NUL-terminated. */
#define EB_EMBED_TEXT3(name, path1, path2, path3)                                                  \
    __asm__(EB_EMBED_BEGIN_(name) ".incbin \"" path1 "\"\n"                                        \
                                  ".incbin \"" path2 "\"\n"                                        \
                                  ".incbin \"" path3 "\"\n"                                        \
                                  ".byte 0\n" EB_EMBED_END_(name))

#endif
