/* The platforms experiment's references (bench/experiments.py, `platforms`): this one source, built
 * static for x86-64 and for aarch64 with the same flags, run natively and under qemu-user, measures
 * what the emulation itself costs, so that a slow path of one target can be told apart from it.
 *
 *   platforms_ref hash MIB   BLAKE3 of MIB MiB with the C implementation of the blake3 crate dmv uses
 *                            (its SIMD code or its portable code, as built): a 16 MiB buffer of
 *                            pseudo-random bytes fed over and over to one hasher. Prints the hash.
 *   platforms_ref walk DIR   every file under DIR opened, read whole and closed (nftw, symbolic links
 *                            not followed), like a commit's scan of a tree: system calls, little CPU.
 *                            Prints the number of files and of bytes and a checksum of the first 8
 *                            bytes of each read.
 *
 * Both print, last, `work_s SECONDS`: the time of the work alone (CLOCK_MONOTONIC), without the
 * process's start. Each target's output must be the same (the suite compares them).
 */
#define _XOPEN_SOURCE 700
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blake3.h"

#define BUF (16u << 20)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int hash(long mib) {
    uint8_t *buf = malloc(BUF);
    if (!buf) return 1;
    uint64_t x = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i < BUF; i += 8) {  /* xorshift64 */
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        memcpy(buf + i, &x, 8);
    }
    double t0 = now();
    blake3_hasher h;
    blake3_hasher_init(&h);
    for (long left = mib << 20; left > 0; left -= BUF)
        blake3_hasher_update(&h, buf, left < (long)BUF ? (size_t)left : BUF);
    uint8_t out[BLAKE3_OUT_LEN];
    blake3_hasher_finalize(&h, out, BLAKE3_OUT_LEN);
    double t1 = now();
    for (int i = 0; i < BLAKE3_OUT_LEN; i++) printf("%02x", out[i]);
    printf("\nbytes %ld\nwork_s %.6f\n", mib << 20, t1 - t0);
    free(buf);
    return 0;
}

static uint64_t files, bytes, sum;
static uint8_t block[1 << 16];

static int visit(const char *path, const struct stat *st, int kind, struct FTW *ftw) {
    (void)st; (void)ftw;
    if (kind != FTW_F) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { perror(path); return 1; }
    ssize_t n;
    while ((n = read(fd, block, sizeof block)) > 0) {
        uint64_t word = 0;  /* the first 8 bytes of each read: a check that costs no CPU to speak of */
        memcpy(&word, block, n < 8 ? (size_t)n : 8);
        sum = sum * 31 + word;
        bytes += (uint64_t)n;
    }
    close(fd);
    if (n < 0) { perror(path); return 1; }
    files++;
    return 0;
}

static int walk(const char *dir) {
    double t0 = now();
    if (nftw(dir, visit, 64, FTW_PHYS) != 0) return 1;
    double t1 = now();
    printf("files %llu\nbytes %llu\nsum %016llx\nwork_s %.6f\n", (unsigned long long)files,
           (unsigned long long)bytes, (unsigned long long)sum, t1 - t0);
    return 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "hash") == 0) return hash(atol(argv[2]));
    if (argc == 3 && strcmp(argv[1], "walk") == 0) return walk(argv[2]);
    fprintf(stderr, "usage: %s hash MIB | walk DIR\n", argv[0]);
    return 2;
}
