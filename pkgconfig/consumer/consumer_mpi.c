/* Heat on a small cylinder split over the MPI ranks with libgpk_mpi; every rank checks its rows. */
#include <gpk_mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    enum { rows = 24, cols = 16 };
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    gpk_context *ctx = NULL;
    if (gpk_mpi_context_create(&ctx, MPI_COMM_WORLD, NULL) != GPK_OK) {
        fprintf(stderr, "gpk: %s\n", gpk_context_last_error(NULL));
        MPI_Finalize();
        return 1;
    }
    size_t begin = 0, count = 0;
    gpk_mpi_default_block(&begin, &count, MPI_COMM_WORLD, rows);
    double *t = malloc(count * cols * sizeof *t), *c = malloc(count * cols * sizeof *c);
    double *out = malloc(count * cols * sizeof *out);
    for (size_t k = 0; k < count * cols; ++k) {
        t[k] = begin + k / cols < 2 ? 100.0 : 0.0; /* the first two rows of the cylinder are hot */
        c[k] = 0.5;
    }
    gpk_heat_params params;
    gpk_heat_params_init(&params);
    params.rows = rows;
    params.cols = cols;
    params.maxiter = 50;
    gpk_heat_report report;
    gpk_status status = gpk_mpi_heat_run(ctx, MPI_COMM_WORLD, &params, begin, count, t, c, out, &report);
    if (status != GPK_OK)
        fprintf(stderr, "gpk_mpi_heat_run: %s: %s\n", gpk_status_string(status), gpk_context_last_error(ctx));
    else if (rank == 0)
        printf("gpk %s: %zu iterations, mean %.6f, max %.6f\n", gpk_version_string(), report.niter,
               report.tavg, report.tmax);
    int ok = status == GPK_OK && report.niter == 50 && report.tmax <= 100.0 && report.tmin >= 0.0;
    free(t);
    free(c);
    free(out);
    gpk_context_destroy(ctx);
    MPI_Finalize();
    return ok ? 0 : 1;
}
