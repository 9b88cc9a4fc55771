!> gpk_mpi: the Fortran binding of libgpk_mpi's heat over MPI ranks (gpk_mpi.h), with mpi_f08's
!> type(MPI_Comm). Compile it after gpk.f90 with the MPI Fortran compiler (mpifort) and link with
!> `pkg-config --libs gpk-mpi`; its path is `pkg-config --variable=fortran_module gpk-mpi`.
!>
!> The cylinder of N rows is split into blocks of whole rows, one a rank in rank order: a rank holds
!> tinit(M, count), rows first_row .. first_row + count - 1 of 1..N (gpk_mpi_block gives the default
!> block). Every rank calls gpk_mpi_heat with the same parameters; every rank gets the same status, and
!> each its rows of the final grid, bit-identical to ctx%heat of the whole grid on one process.
module gpk_mpi
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: int64
    use mpi_f08, only: MPI_Comm, MPI_Comm_rank, MPI_Comm_size, MPI_Allreduce, MPI_Bcast, MPI_IN_PLACE, &
                       MPI_INTEGER, MPI_CHARACTER, MPI_MIN
    use gpk, only: gpk_context, gpk_heat_report, GPK_OK, GPK_ERR_INVALID_ARGUMENT, c_heat_params, heat_params, &
                   settle
    implicit none
    private

    public :: gpk_mpi_heat, gpk_mpi_block

    interface
        function c_mpi_heat_run_f(ctx, comm, params, row_begin, row_count, tinit, conductivity, tfinal, final) &
            bind(c, name='gpk_mpi_heat_run_f') result(status)
            import :: c_int, c_ptr, c_size_t, c_double, c_heat_params, gpk_heat_report
            type(c_ptr), value :: ctx
            integer(c_int), value :: comm
            type(c_heat_params), intent(in) :: params
            integer(c_size_t), value :: row_begin, row_count
            real(c_double), intent(in) :: tinit(*), conductivity(*)
            real(c_double), intent(inout), optional :: tfinal(*)
            type(gpk_heat_report), intent(inout), optional :: final
            integer(c_int) :: status
        end function
    end interface

contains

    !> This rank's default block of `rows` rows: first_row .. first_row + row_count - 1 (1-based), the split
    !> of gpk_mpi_default_block. Not collective.
    subroutine gpk_mpi_block(comm, rows, first_row, row_count)
        type(MPI_Comm), intent(in) :: comm
        integer, intent(in) :: rows
        integer, intent(out) :: first_row, row_count
        integer :: rank, size, share, extra

        call MPI_Comm_rank(comm, rank)
        call MPI_Comm_size(comm, size)
        share = rows/size
        extra = mod(rows, size)
        first_row = rank*share + min(rank, extra) + 1
        row_count = share
        if (rank < extra) row_count = share + 1
    end subroutine

    !> Heat dissipation on the N-row cylinder (rows = N) whose rows first_row.. this rank holds in
    !> tinit(M, count) and conductivity(M, count); tfinal (same shape) receives the rank's rows of the final
    !> grid, report the final report (the whole grid's, the same on every rank). maxiter defaults to 1,
    !> threshold to 0, period to 0. Collective over comm.
    function gpk_mpi_heat(ctx, comm, rows, first_row, tinit, conductivity, tfinal, maxiter, threshold, period, &
                          report, errmsg) result(status)
        type(gpk_context), intent(inout) :: ctx
        type(MPI_Comm), intent(in) :: comm
        integer, intent(in) :: rows, first_row
        real(c_double), intent(in), contiguous :: tinit(:, :), conductivity(:, :)
        real(c_double), intent(inout), contiguous, optional :: tfinal(:, :)
        integer, intent(in), optional :: maxiter, period
        real(c_double), intent(in), optional :: threshold
        type(gpk_heat_report), intent(inout), optional :: report
        character(:), allocatable, intent(out), optional :: errmsg
        integer :: status
        type(c_heat_params) :: params
        character(:), allocatable :: message

        allocate (character(0) :: message)
        status = heat_params(params, tinit, conductivity, tfinal, maxiter, threshold, period, message)
        if (status == GPK_OK .and. (rows < 1 .or. first_row < 1)) then
            status = GPK_ERR_INVALID_ARGUMENT
            message = 'rows and first_row must be at least 1'
        end if
        ! A check that fails here on one rank fails on every rank, before anyone waits in the C call.
        call agree(comm, status, message)
        if (status == GPK_OK) then
            params%rows = int(rows, c_size_t)
            status = c_mpi_heat_run_f(ctx%c_handle(), int(comm%MPI_VAL, c_int), params, &
                                      int(first_row - 1, c_size_t), size(tinit, 2, c_size_t), tinit, &
                                      conductivity, tfinal, report)
            call settle(status, ctx%c_handle(), message)
        end if
        if (present(errmsg)) errmsg = message
    end function

    !> Every rank learns the first failing rank's status and message (prefixed with its rank).
    subroutine agree(comm, status, message)
        type(MPI_Comm), intent(in) :: comm
        integer, intent(inout) :: status
        character(:), allocatable, intent(inout) :: message
        integer :: rank, size, first, length, code
        character(16) :: shown

        call MPI_Comm_rank(comm, rank)
        call MPI_Comm_size(comm, size)
        first = size
        if (status /= GPK_OK) first = rank
        call MPI_Allreduce(MPI_IN_PLACE, first, 1, MPI_INTEGER, MPI_MIN, comm)
        if (first == size) return
        code = status
        length = len(message)
        call MPI_Bcast(code, 1, MPI_INTEGER, first, comm)
        call MPI_Bcast(length, 1, MPI_INTEGER, first, comm)
        if (rank /= first) then
            deallocate (message)
            allocate (character(length) :: message)
        end if
        call MPI_Bcast(message, length, MPI_CHARACTER, first, comm)
        write (shown, '(i0)') first
        if (size > 1) message = 'rank '//trim(shown)//': '//message
        status = code
    end subroutine

end module gpk_mpi
