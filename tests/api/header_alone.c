/* gpk.h must compile alone as C99 with every warning as an error, and its _INIT macros must work. */
#include "gpk.h"

int main(void) {
    gpk_context_options o = GPK_CONTEXT_OPTIONS_INIT;
    gpk_heat_params h = GPK_HEAT_PARAMS_INIT;
    gpk_histogram_params p = GPK_HISTOGRAM_PARAMS_INIT;
    gpk_convolve_params c = GPK_CONVOLVE_PARAMS_INIT;
    (void)o;
    (void)h;
    (void)p;
    (void)c;
    return GPK_VERSION_NUMBER > 0 ? 0 : 1;
}
