/* suggest.c - the closest known name to a mistyped one (suggest.h):
 * optimal string alignment distance, case-insensitive. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "zbsched/suggest.h"

/* Names are flags and keys: longer words are never close to one. */
#define MAX_LEN 64

int zb_suggest_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    int d[MAX_LEN + 1][MAX_LEN + 1];

    if (n > MAX_LEN || m > MAX_LEN)
        return MAX_LEN;
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int ca = tolower((unsigned char)a[i - 1]);
            int cb = tolower((unsigned char)b[j - 1]);
            int best = d[i - 1][j - 1] + (ca != cb);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 &&
                ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

const char *zb_suggest(const char *word, const char *const *names, size_t n)
{
    const char *best = NULL;
    int best_d = 0;

    for (size_t i = 0; i < n; i++) {
        if (!names[i])
            continue;
        size_t len = strlen(names[i]);
        int allowed = len <= 4 ? 1 : len <= 8 ? 2 : 3;
        int d = zb_suggest_distance(word, names[i]);
        if (d <= allowed && (!best || d < best_d)) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}
