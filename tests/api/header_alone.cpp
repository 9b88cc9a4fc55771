// gpk.h must compile alone as C++ with every warning as an error.
#include "gpk.h"

int main() {
    gpk_context_options o = GPK_CONTEXT_OPTIONS_INIT;
    gpk_histogram_params p = GPK_HISTOGRAM_PARAMS_INIT;
    (void)o;
    (void)p;
    return GPK_VERSION_NUMBER > 0 ? 0 : 1;
}
