/* png.h - pictures as PNG: every command that draws an SVG (render,
 * frontier, plan) converts it here, so one rule says what --png needs. */
#ifndef ZBSCHED_CLI_PNG_H
#define ZBSCHED_CLI_PNG_H

/* The one help line of a --png option. */
#define CLI_OPT_PNG \
    { "png", 0, "FILE", "the same picture as PNG (needs rsvg-convert,\n" \
                        "Debian's librsvg2-bin)" }

/* svg as PNG into path, whole or not at all (io.h's atomic write; "-":
 * stdout, never a terminal), through rsvg-convert. cmd names the
 * command in the one-line error ("render: --png needs rsvg-convert ...");
 * returns a CLI_* status, errors printed. */
int cli_png_write(const char *cmd, const char *path, const char *svg);

#endif
