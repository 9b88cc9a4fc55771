!> gpk_mpi (gpk_mpi.f90) under mpirun: each rank's rows of the final grid and the final report equal
!> ctx%heat of the whole grid in the same process, bit for bit (1 and 3 ranks, default blocks of 37 rows);
!> a shape error on the last rank only and a maxiter that differs on rank 1 fail on every rank alike.
program test_mpi_heat
    use, intrinsic :: iso_fortran_env, only: real64
    use mpi_f08, only: MPI_Init, MPI_Finalize, MPI_COMM_WORLD, MPI_Comm_rank, MPI_Comm_size
    use gpk
    use gpk_mpi
    use checks
    implicit none
    integer, parameter :: rows = 37, cols = 23
    real(real64) :: t(cols, rows), c(cols, rows), whole(cols, rows)
    real(real64), allocatable :: mine(:, :)
    type(gpk_context) :: ctx
    type(gpk_heat_report) :: want, got
    integer :: first, count, i, j, rank, size, status, maxiter

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, size)
    do i = 1, rows
        do j = 1, cols
            t(j, i) = 100*sin(0.37_real64*i + 0.11_real64*j)
            c(j, i) = 0.5_real64 + 0.45_real64*cos(0.23_real64*i*j)
        end do
    end do
    call check_ok(ctx%create(backend=GPK_BACKEND_CPU, errmsg=msg), 'create a CPU context')
    call check_ok(ctx%heat(t, c, whole, maxiter=40, period=7, report=want, errmsg=msg), 'the whole grid')
    call gpk_mpi_block(MPI_COMM_WORLD, rows, first, count)
    allocate (mine(cols, count))
    status = gpk_mpi_heat(ctx, MPI_COMM_WORLD, rows, first, t(:, first:first + count - 1), &
                          c(:, first:first + count - 1), mine, maxiter=40, period=7, report=got, errmsg=msg)
    call check_ok(status, 'the ranks')
    call check(all(mine == whole(:, first:first + count - 1)), 'the rank''s rows of the final grid')
    call check(got%niter == want%niter .and. got%tmin == want%tmin .and. got%tmax == want%tmax .and. &
               got%maxdiff == want%maxdiff .and. got%tavg == want%tavg, 'the final report')

    ! The last rank's conductivity has a row too few: every rank returns its message.
    if (rank == size - 1) then
        status = gpk_mpi_heat(ctx, MPI_COMM_WORLD, rows, first, t(:, first:first + count - 1), &
                              c(:, first:first + count - 2), mine, maxiter=40, errmsg=msg)
    else
        status = gpk_mpi_heat(ctx, MPI_COMM_WORLD, rows, first, t(:, first:first + count - 1), &
                              c(:, first:first + count - 1), mine, maxiter=40, errmsg=msg)
    end if
    call check_invalid(status, 'conductivity has shape', 'a shape error on the last rank')
    if (size > 1) then
        maxiter = 40
        if (rank == 1) maxiter = 41
        status = gpk_mpi_heat(ctx, MPI_COMM_WORLD, rows, first, t(:, first:first + count - 1), &
                              c(:, first:first + count - 1), mine, maxiter=maxiter, errmsg=msg)
        call check_invalid(status, 'params->maxiter differs', 'maxiter differing on rank 1')
    end if
    call MPI_Finalize()
    call finish('test_mpi_heat (Fortran)')
end program test_mpi_heat
