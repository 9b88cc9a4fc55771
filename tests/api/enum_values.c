/* Unknown enum values, as a C caller may pass them: the string functions answer, never crash. (In C an
 * enum is an int; in C++ such a value could not even be loaded without undefined behaviour.) */
#include "gpk.h"

#include <stdio.h>
#include <string.h>

static int failures = 0;

static void expect(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "FAILED: %s\n", what);
        ++failures;
    }
}

int main(void) {
    expect(strcmp(gpk_status_string((gpk_status)1234), "unknown status") == 0, "status 1234");
    expect(strcmp(gpk_status_string((gpk_status)-1), "unknown status") == 0, "status -1");
    expect(strcmp(gpk_backend_name((gpk_backend)9), "unknown") == 0, "backend 9");
    expect(gpk_dtype_size((gpk_dtype)77) == 0, "dtype size 77");
    expect(strcmp(gpk_dtype_name((gpk_dtype)77), "unknown") == 0, "dtype name 77");
    expect(strcmp(gpk_dtype_name((gpk_dtype)-2), "unknown") == 0, "dtype name -2");
    printf("enum_values: %d failed\n", failures);
    return failures ? 1 : 0;
}
