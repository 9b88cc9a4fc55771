!> Heat on a small cylinder, then the Laplacian of the final grid, with the gpk Fortran binding.
program example
    use, intrinsic :: iso_fortran_env, only: real64
    use gpk
    implicit none
    integer, parameter :: rows = 40, cols = 60
    real(real64) :: tinit(cols, rows), conductivity(cols, rows), tfinal(cols, rows), edges(cols, rows)
    type(gpk_context) :: ctx
    type(gpk_filter) :: laplacian
    type(gpk_heat_report) :: report
    character(:), allocatable :: errmsg

    ! tinit(j, i) is row i, column j of the cylinder; the columns (first index) wrap around.
    tinit = 0
    tinit(:, 1) = 100
    conductivity = 0.5_real64
    if (ctx%create(errmsg=errmsg) /= GPK_OK) error stop errmsg
    if (ctx%heat(tinit, conductivity, tfinal, maxiter=5000, threshold=1e-4_real64, report=report, &
                 errmsg=errmsg) /= GPK_OK) error stop errmsg
    print '(a, i0, a, f0.4, a, f0.4)', 'heat: ', report%niter, ' iterations, mean ', report%tavg, ', max ', &
        report%tmax

    if (laplacian%create_named('lp3', errmsg) /= GPK_OK) error stop errmsg
    if (ctx%convolve(laplacian, tfinal, edges, errmsg=errmsg) /= GPK_OK) error stop errmsg
    print '(a, f0.6)', 'largest Laplacian: ', maxval(abs(edges))
end program example
