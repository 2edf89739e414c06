/* The MPI side of benchmarks/speed/triage_archive.py: ranks writing and reading one shared file through MPI-IO, and
 * files of their own through POSIX, so the log shows collective vs independent I/O and rank imbalance.
 *
 *   mpiexec -n P mpiogen DIR PATTERN SEED COUNT SIZE SKEW
 *
 * PATTERN: indep (COUNT MPI_File_write_at of SIZE bytes per rank, interleaved by rank, then read back),
 * coll (the same with MPI_File_write_at_all / read_at_all), posix (a file per rank, COUNT writes of SIZE).
 * SKEW: rank 0 does SKEW times the others' COUNT (imbalance). Built with Debian's mpicc.
 */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 7) {
        if (!rank) fprintf(stderr, "usage: mpiogen DIR PATTERN SEED COUNT SIZE SKEW\n");
        MPI_Finalize();
        return 2;
    }
    const char *dir = argv[1], *pattern = argv[2];
    srand(atoi(argv[3]) + rank);
    long count = atol(argv[4]), len = atol(argv[5]);
    int skew = atoi(argv[6]) > 0 ? atoi(argv[6]) : 1;
    long mine = rank == 0 ? count * skew : count;
    char *buf = calloc(1, len);
    char path[4096];
    if (!strcmp(pattern, "posix")) {
        snprintf(path, sizeof path, "%s/rank%d.bin", dir, rank);
        int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
        for (long i = 0; i < mine; i++)
            if (write(fd, buf, len) != len) break;
        close(fd);
        unlink(path);
    } else {
        int coll = !strcmp(pattern, "coll");
        snprintf(path, sizeof path, "%s/shared.bin", dir);
        MPI_File fh;
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
        long steps = count;  /* collective calls need every rank: skew by size instead */
        for (long i = 0; i < steps; i++) {
            MPI_Offset off = ((MPI_Offset)i * size + rank) * len;
            if (coll) MPI_File_write_at_all(fh, off, buf, (int)len, MPI_BYTE, MPI_STATUS_IGNORE);
            else MPI_File_write_at(fh, off, buf, (int)len, MPI_BYTE, MPI_STATUS_IGNORE);
        }
        for (long i = 0; i < steps; i++) {
            MPI_Offset off = ((MPI_Offset)(rand() % steps) * size + rank) * len;
            if (coll) MPI_File_read_at_all(fh, off, buf, (int)len, MPI_BYTE, MPI_STATUS_IGNORE);
            else MPI_File_read_at(fh, off, buf, (int)len, MPI_BYTE, MPI_STATUS_IGNORE);
        }
        MPI_File_close(&fh);
        MPI_Barrier(MPI_COMM_WORLD);
        if (!rank) unlink(path);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
