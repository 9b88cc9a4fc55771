!> gpk: the Fortran binding of the gpk library (heat dissipation, histograms, 2D convolution).
!>
!> Compile this file with your program and link with `pkg-config --libs gpk`; its path is
!> `pkg-config --variable=fortran_module gpk`.
!>
!> Array layout. gpk's grids and images are row-major; a Fortran array a(x, y), whose first index runs
!> along a row, has the same memory order, so arrays are passed without copies:
!>   heat       t(M, N) is the N-row, M-column cylinder: t(j, i) is row i, column j, and the columns
!>              (the first index) wrap around; rows 1 and N are next to the fixed halo rows.
!>   histogram  data(W*C, H): H rows of W pixels of C interleaved channels; data(:) is one row.
!>              hist(bins*C) is channel-major: hist((c-1)*bins + b) counts bin b of channel c.
!>   convolve   images img(W*C, H) as above; 2D filter taps(kw, kh) with taps(b, a) = f(a, b), that
!>              is, taps(:, a) is row a of the kernel.
!> Sample types come from the array's kind: integer(int8) and integer(int16) are read as unsigned
!> (u8, u16), integer(int32) as i32 (or u32 with unsigned=.true.), real(real32), real(real64).
!>
!> Errors. Every operation is a function returning a status: GPK_OK (0) or a GPK_ERR_* code. The
!> optional allocatable `errmsg` receives the message of a failure ('' on success). Nothing stops
!> the program.
!>
!> Handles. gpk_context and gpk_filter free their C objects when they go out of scope (or with
!> destroy()). A context cannot be copied: assigning one destroys the target's context and leaves
!> it empty. Assigning a filter makes an independent copy.
module gpk
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: int8, int16, int32, int64, real32, real64
    implicit none
    private

    public :: gpk_version, gpk_status_message
    ! For the gpk_mpi module (gpk_mpi.f90), which builds on this one: the C parameters of a heat run, as
    ! heat_params checks and fills them, and settle, which fetches a context's message.
    public :: c_heat_params, heat_params, settle
    ! For the layout test (tests/layout.f90), which checks every mirror of a C struct against gpk.h.
    public :: c_context_options, c_histogram_params, c_filter_info, c_image, c_convolve_params

    integer, parameter, public :: GPK_OK = 0, GPK_ERR_INVALID_ARGUMENT = 1, GPK_ERR_OUT_OF_MEMORY = 2, &
                                  GPK_ERR_NO_DEVICE = 3, GPK_ERR_UNSUPPORTED = 4, GPK_ERR_DEVICE = 5, &
                                  GPK_ERR_CANCELLED = 6, GPK_ERR_INTERNAL = 7
    integer, parameter, public :: GPK_BACKEND_AUTO = 0, GPK_BACKEND_CPU = 1, GPK_BACKEND_CUDA = 2
    integer, parameter, public :: GPK_BORDER_ZERO = 0, GPK_BORDER_CLAMP = 1, GPK_BORDER_MIRROR = 2, &
                                  GPK_BORDER_REFLECT = 3, GPK_BORDER_WRAP = 4
    integer, parameter, public :: GPK_NORMALIZE_NONE = 0, GPK_NORMALIZE_SUM = 1, GPK_NORMALIZE_MINMAX = 2
    integer, parameter, public :: GPK_ACCUMULATE_AUTO = 0, GPK_ACCUMULATE_F32 = 1, GPK_ACCUMULATE_F64 = 2

    integer(c_int), parameter :: DTYPE_U8 = 0, DTYPE_U16 = 1, DTYPE_U32 = 2, DTYPE_I32 = 3, DTYPE_F32 = 4, &
                                 DTYPE_F64 = 5, DTYPE_NONE = -1

    !> One report of a heat run (the C struct gpk_heat_report).
    type, bind(c), public :: gpk_heat_report
        integer(c_size_t) :: niter = 0
        real(c_double) :: tmin = 0, tmax = 0, maxdiff = 0, tavg = 0, time = 0
    end type

    !> The shape of a filter.
    type, public :: gpk_filter_shape
        logical :: separable = .false.
        integer :: kh = 0, kw = 0
        real(real64) :: sum = 0
        logical :: integer_taps = .false.
    end type

    !> A gpk context: the backend and its reusable buffers. Used by one thread at a time.
    type, public :: gpk_context
        private
        type(c_ptr) :: handle = c_null_ptr
    contains
        procedure :: create => context_create
        procedure :: destroy => context_destroy
        procedure :: is_created => context_is_created
        procedure :: backend => context_backend
        procedure :: c_handle => context_c_handle
        procedure :: heat => context_heat
        procedure, private :: context_histogram_1d, context_histogram_2d
        generic :: histogram => context_histogram_1d, context_histogram_2d
        procedure :: convolve => context_convolve
        procedure, private :: context_assign
        generic :: assignment(=) => context_assign
        final :: context_finalize
    end type

    !> An immutable filter: a 2D kernel or a separable (row, column) pair.
    type, public :: gpk_filter
        private
        type(c_ptr) :: handle = c_null_ptr
    contains
        procedure :: create_named => filter_create_named
        procedure :: create_2d => filter_create_2d
        procedure :: create_separable => filter_create_separable
        procedure :: destroy => filter_destroy
        procedure :: is_created => filter_is_created
        procedure :: shape => filter_shape
        procedure :: taps => filter_taps
        procedure, private :: filter_assign
        generic :: assignment(=) => filter_assign
        final :: filter_finalize
    end type

    ! Mirrors of gpk.h's parameter structs (C enums are int-sized).
    type, bind(c) :: c_context_options
        integer(c_size_t) :: struct_size
        integer(c_int) :: backend, device
        type(c_ptr) :: stream
        integer(c_int) :: threads
    end type

    type, bind(c) :: c_heat_params
        integer(c_size_t) :: struct_size, rows, cols, maxiter
        real(c_double) :: threshold
        integer(c_size_t) :: period
        type(c_funptr) :: on_report, on_progress
        integer(c_size_t) :: progress_interval
        type(c_ptr) :: user_data
        integer(c_size_t) :: start_iteration
        type(c_ptr) :: fixed_rows
        type(c_funptr) :: on_checkpoint
        integer(c_size_t) :: checkpoint_interval
    end type

    type, bind(c) :: c_histogram_params
        integer(c_size_t) :: struct_size
        integer(c_int) :: dtype
        integer(c_size_t) :: width, height
        integer(c_int) :: channels
        integer(c_size_t) :: stride, bins
        real(c_double) :: lower, upper
        integer(c_int64_t) :: saturate
    end type

    type, bind(c) :: c_filter_info
        integer(c_size_t) :: struct_size
        integer(c_int) :: separable
        integer(c_size_t) :: kh, kw
        real(c_double) :: sum
        integer(c_int) :: integer_taps
    end type

    type, bind(c) :: c_image
        integer(c_size_t) :: struct_size
        integer(c_int) :: dtype
        integer(c_size_t) :: width, height
        integer(c_int) :: channels
        integer(c_size_t) :: stride
    end type

    type, bind(c) :: c_convolve_params
        integer(c_size_t) :: struct_size
        type(c_ptr) :: filter
        integer(c_int) :: border, normalize, accumulate
    end type

    ! The reports a heat run delivers to its callback.
    type :: report_log
        type(gpk_heat_report), allocatable :: reports(:)
        integer :: count = 0
    end type

    interface
        function c_strlen(s) bind(c, name='strlen') result(n)
            import :: c_ptr, c_size_t
            type(c_ptr), value :: s
            integer(c_size_t) :: n
        end function
        function c_version_string() bind(c, name='gpk_version_string') result(s)
            import :: c_ptr
            type(c_ptr) :: s
        end function
        function c_status_string(status) bind(c, name='gpk_status_string') result(s)
            import :: c_ptr, c_int
            integer(c_int), value :: status
            type(c_ptr) :: s
        end function
        function c_context_options_init(opts, struct_size) bind(c, name='gpk_context_options_init_sized') result(status)
            import :: c_int, c_size_t, c_context_options
            type(c_context_options), intent(out) :: opts
            integer(c_size_t), value :: struct_size
            integer(c_int) :: status
        end function
        function c_context_create(out, opts) bind(c, name='gpk_context_create') result(status)
            import :: c_int, c_ptr, c_context_options
            type(c_ptr), intent(out) :: out
            type(c_context_options), intent(in) :: opts
            integer(c_int) :: status
        end function
        subroutine c_context_destroy(ctx) bind(c, name='gpk_context_destroy')
            import :: c_ptr
            type(c_ptr), value :: ctx
        end subroutine
        function c_context_backend(ctx) bind(c, name='gpk_context_backend') result(backend)
            import :: c_ptr, c_int
            type(c_ptr), value :: ctx
            integer(c_int) :: backend
        end function
        function c_context_last_error(ctx) bind(c, name='gpk_context_last_error') result(s)
            import :: c_ptr
            type(c_ptr), value :: ctx
            type(c_ptr) :: s
        end function
        function c_heat_params_init(params, struct_size) bind(c, name='gpk_heat_params_init_sized') result(status)
            import :: c_int, c_size_t, c_heat_params
            type(c_heat_params), intent(out) :: params
            integer(c_size_t), value :: struct_size
            integer(c_int) :: status
        end function
        function c_heat_run(ctx, params, tinit, conductivity, tfinal, final) bind(c, name='gpk_heat_run') &
            result(status)
            import :: c_int, c_ptr, c_double, c_heat_params, gpk_heat_report
            type(c_ptr), value :: ctx
            type(c_heat_params), intent(in) :: params
            real(c_double), intent(in) :: tinit(*), conductivity(*)
            real(c_double), intent(inout), optional :: tfinal(*)
            type(gpk_heat_report), intent(inout), optional :: final
            integer(c_int) :: status
        end function
        function c_histogram_params_init(params, struct_size) bind(c, name='gpk_histogram_params_init_sized') result(status)
            import :: c_int, c_size_t, c_histogram_params
            type(c_histogram_params), intent(out) :: params
            integer(c_size_t), value :: struct_size
            integer(c_int) :: status
        end function
        function c_histogram(ctx, params, data, hist, uncounted) bind(c, name='gpk_histogram') result(status)
            import :: c_int, c_ptr, c_int64_t, c_histogram_params
            type(c_ptr), value :: ctx, data
            type(c_histogram_params), intent(in) :: params
            integer(c_int64_t), intent(inout) :: hist(*)
            integer(c_int64_t), intent(inout), optional :: uncounted(*)
            integer(c_int) :: status
        end function
        function c_filter_create_2d(out, kh, kw, taps) bind(c, name='gpk_filter_create_2d') result(status)
            import :: c_int, c_ptr, c_size_t, c_double
            type(c_ptr), intent(out) :: out
            integer(c_size_t), value :: kh, kw
            real(c_double), intent(in) :: taps(*)
            integer(c_int) :: status
        end function
        function c_filter_create_separable(out, row_len, row, col_len, col) &
            bind(c, name='gpk_filter_create_separable') result(status)
            import :: c_int, c_ptr, c_size_t, c_double
            type(c_ptr), intent(out) :: out
            integer(c_size_t), value :: row_len, col_len
            real(c_double), intent(in) :: row(*), col(*)
            integer(c_int) :: status
        end function
        function c_filter_create_named(out, name) bind(c, name='gpk_filter_create_named') result(status)
            import :: c_int, c_ptr, c_char
            type(c_ptr), intent(out) :: out
            character(kind=c_char), intent(in) :: name(*)
            integer(c_int) :: status
        end function
        subroutine c_filter_destroy(filter) bind(c, name='gpk_filter_destroy')
            import :: c_ptr
            type(c_ptr), value :: filter
        end subroutine
        function c_filter_get_info(info, filter) bind(c, name='gpk_filter_get_info') result(status)
            import :: c_int, c_ptr, c_filter_info
            type(c_filter_info), intent(inout) :: info
            type(c_ptr), value :: filter
            integer(c_int) :: status
        end function
        function c_filter_get_taps(taps, capacity, filter) bind(c, name='gpk_filter_get_taps') result(status)
            import :: c_int, c_ptr, c_size_t, c_double
            real(c_double), intent(inout) :: taps(*)
            integer(c_size_t), value :: capacity
            type(c_ptr), value :: filter
            integer(c_int) :: status
        end function
        function c_convolve_params_init(params, struct_size) bind(c, name='gpk_convolve_params_init_sized') result(status)
            import :: c_int, c_size_t, c_convolve_params
            type(c_convolve_params), intent(out) :: params
            integer(c_size_t), value :: struct_size
            integer(c_int) :: status
        end function
        function c_convolve(ctx, params, in, in_data, out, out_data) bind(c, name='gpk_convolve') result(status)
            import :: c_int, c_ptr, c_convolve_params, c_image
            type(c_ptr), value :: ctx, in_data, out_data
            type(c_convolve_params), intent(in) :: params
            type(c_image), intent(in) :: in, out
            integer(c_int) :: status
        end function
    end interface

contains

    ! ------------------------------------------------------------------------------------------
    ! Strings and errors
    ! ------------------------------------------------------------------------------------------

    !> Copies a NUL-terminated C string.
    function c_string(p) result(s)
        type(c_ptr), intent(in) :: p
        character(:), allocatable :: s
        character(kind=c_char), pointer :: chars(:)
        integer :: i, n

        if (.not. c_associated(p)) then
            s = ''
            return
        end if
        n = int(c_strlen(p))
        call c_f_pointer(p, chars, [n])
        allocate (character(n) :: s)
        do i = 1, n
            s(i:i) = chars(i)
        end do
    end function

    !> The run-time version of the library, "MAJOR.MINOR.PATCH".
    function gpk_version() result(version)
        character(:), allocatable :: version
        version = c_string(c_version_string())
    end function

    !> A short description of a status ("ok", "invalid argument", ...).
    function gpk_status_message(status) result(message)
        integer, intent(in) :: status
        character(:), allocatable :: message
        message = c_string(c_status_string(int(status, c_int)))
    end function

    ! Messages travel in a non-optional `message` that each public function starts empty and copies to
    ! its optional errmsg itself: gfortran 12 loses the value of an optional deferred-length errmsg
    ! passed on to another procedure. (allocate, not message = '', keeps gfortran's -Wall quiet.)

    !> After a C call: on failure, the message left in `handle`'s context (or the thread's, for a null
    !> handle).
    subroutine settle(status, handle, message)
        integer, intent(in) :: status
        type(c_ptr), intent(in) :: handle
        character(:), allocatable, intent(inout) :: message

        if (status /= GPK_OK) message = c_string(c_context_last_error(handle))
    end subroutine

    !> A misuse the binding detects before calling C: GPK_ERR_INVALID_ARGUMENT with `text`.
    function invalid(text, message) result(status)
        character(*), intent(in) :: text
        character(:), allocatable, intent(inout) :: message
        integer :: status

        status = GPK_ERR_INVALID_ARGUMENT
        message = text
    end function

    function str(value) result(s)
        integer(int64), intent(in) :: value
        character(:), allocatable :: s
        character(24) :: buffer

        write (buffer, '(i0)') value
        s = trim(buffer)
    end function

    function shape_str(array_shape) result(s)
        integer, intent(in) :: array_shape(:)
        character(:), allocatable :: s
        integer :: k

        s = '('
        do k = 1, size(array_shape)
            if (k > 1) s = s//', '
            s = s//str(int(array_shape(k), int64))
        end do
        s = s//')'
    end function

    ! ------------------------------------------------------------------------------------------
    ! Contexts
    ! ------------------------------------------------------------------------------------------

    !> The C gpk_context* (for gpk_mpi and other C calls); c_null_ptr before create().
    function context_c_handle(self) result(handle)
        class(gpk_context), intent(in) :: self
        type(c_ptr) :: handle

        handle = self%handle
    end function

    !> Creates the context (destroying any it held). backend: GPK_BACKEND_AUTO (default), _CPU or
    !> _CUDA; threads: CPU worker threads (0 = all cores); device: CUDA device ordinal.
    function context_create(self, backend, threads, device, errmsg) result(status)
        class(gpk_context), intent(inout) :: self
        integer, intent(in), optional :: backend, threads, device
        character(:), allocatable, intent(out), optional :: errmsg
        integer :: status
        type(c_context_options) :: opts
        character(:), allocatable :: message

        allocate (character(0) :: message)
        call self%destroy()
        status = c_context_options_init(opts, c_sizeof(opts))
        if (present(backend)) opts%backend = int(backend, c_int)
        if (present(device)) opts%device = int(device, c_int)
        if (present(threads)) then
            if (threads < 0) then
                status = invalid('threads is '//str(int(threads, int64))//'; it must be >= 0', message)
            else
                opts%threads = int(threads, c_int)
            end if
        end if
        if (status == GPK_OK) then
            status = c_context_create(self%handle, opts)
            call settle(status, c_null_ptr, message)
        end if
        if (present(errmsg)) errmsg = message
    end function

    !> Frees the C context; the object may be created again.
    subroutine context_destroy(self)
        class(gpk_context), intent(inout) :: self
        call c_context_destroy(self%handle)
        self%handle = c_null_ptr
    end subroutine

    impure elemental subroutine context_finalize(self)
        type(gpk_context), intent(inout) :: self
        call self%destroy()
    end subroutine

    !> Contexts are not copyable: the target's context is destroyed and the target left empty, so that
    !> no C context is ever owned twice.
    subroutine context_assign(lhs, rhs)
        class(gpk_context), intent(inout) :: lhs
        class(gpk_context), intent(in) :: rhs

        if (c_associated(lhs%handle, rhs%handle)) return
        call lhs%destroy()
    end subroutine

    logical function context_is_created(self)
        class(gpk_context), intent(in) :: self
        context_is_created = c_associated(self%handle)
    end function

    !> GPK_BACKEND_CPU or GPK_BACKEND_CUDA; GPK_BACKEND_AUTO for a context not created.
    integer function context_backend(self)
        class(gpk_context), intent(in) :: self
        context_backend = int(c_context_backend(self%handle))
    end function

    ! ------------------------------------------------------------------------------------------
    ! Heat dissipation
    ! ------------------------------------------------------------------------------------------

    !> Runs the heat simulation on the cylinder tinit(M, N) (N rows of M columns; see the layout note)
    !> with conductivities of the same shape. tfinal (same shape) receives the final grid, report the
    !> final report, history the periodic reports (every `period` iterations). maxiter defaults to 1,
    !> threshold to 0 (never converge), period to 0 (no periodic reports).
    function context_heat(self, tinit, conductivity, tfinal, maxiter, threshold, period, report, history, &
                          errmsg) result(status)
        class(gpk_context), intent(inout) :: self
        real(c_double), intent(in), contiguous :: tinit(:, :), conductivity(:, :)
        real(c_double), intent(inout), contiguous, optional :: tfinal(:, :)
        integer, intent(in), optional :: maxiter, period
        real(c_double), intent(in), optional :: threshold
        type(gpk_heat_report), intent(inout), optional :: report
        type(gpk_heat_report), allocatable, intent(out), optional :: history(:)
        character(:), allocatable, intent(out), optional :: errmsg
        integer :: status
        type(c_heat_params) :: params
        ! Written by collect_report during the C call, which the compiler cannot see.
        type(report_log), target, volatile :: log
        character(:), allocatable :: message

        allocate (character(0) :: message)
        if (present(history)) allocate (history(0))
        status = heat_params(params, tinit, conductivity, tfinal, maxiter, threshold, period, message)
        if (status == GPK_OK) then
            if (present(history)) then
                params%on_report = c_funloc(collect_report)
                params%user_data = c_loc(log)
            end if
            status = c_heat_run(self%handle, params, tinit, conductivity, tfinal, report)
            call settle(status, self%handle, message)
            if (present(history)) history = log%reports(1:log%count)
        end if
        if (present(errmsg)) errmsg = message
    end function

    !> Checks the shapes and counts of a heat run and fills its C parameters.
    function heat_params(params, tinit, conductivity, tfinal, maxiter, threshold, period, message) result(status)
        type(c_heat_params), intent(out) :: params
        real(c_double), intent(in) :: tinit(:, :), conductivity(:, :)
        real(c_double), intent(in), optional :: tfinal(:, :)
        integer, intent(in), optional :: maxiter, period
        real(c_double), intent(in), optional :: threshold
        character(:), allocatable, intent(inout) :: message
        integer :: status

        status = c_heat_params_init(params, c_sizeof(params))
        if (any(shape(conductivity) /= shape(tinit))) then
            status = invalid('conductivity has shape '//shape_str(shape(conductivity))//'; tinit has '// &
                             shape_str(shape(tinit)), message)
            return
        end if
        if (present(tfinal)) then
            if (any(shape(tfinal) /= shape(tinit))) then
                status = invalid('tfinal has shape '//shape_str(shape(tfinal))//'; tinit has '// &
                                 shape_str(shape(tinit)), message)
                return
            end if
        end if
        params%cols = size(tinit, 1, c_size_t)
        params%rows = size(tinit, 2, c_size_t)
        if (present(maxiter)) then
            if (maxiter < 0) then
                status = invalid('maxiter is '//str(int(maxiter, int64))//'; it must be at least 1', message)
                return
            end if
            params%maxiter = int(maxiter, c_size_t)
        end if
        if (present(period)) then
            if (period < 0) then
                status = invalid('period is '//str(int(period, int64))//'; it must be >= 0', message)
                return
            end if
            params%period = int(period, c_size_t)
        end if
        if (present(threshold)) params%threshold = threshold
    end function

    !> The heat callback: appends each periodic report to the report_log behind user_data.
    function collect_report(report, is_final, user_data) bind(c) result(stop)
        type(gpk_heat_report), intent(in) :: report
        integer(c_int), value :: is_final
        type(c_ptr), value :: user_data
        integer(c_int) :: stop
        type(report_log), pointer :: log
        type(gpk_heat_report), allocatable :: grown(:)

        stop = 0
        if (is_final /= 0) return
        call c_f_pointer(user_data, log)
        if (.not. allocated(log%reports)) allocate (log%reports(16))
        if (log%count == size(log%reports)) then
            allocate (grown(2*size(log%reports)))
            grown(1:log%count) = log%reports
            call move_alloc(grown, log%reports)
        end if
        log%count = log%count + 1
        log%reports(log%count) = report
    end function

    ! ------------------------------------------------------------------------------------------
    ! Histograms
    ! ------------------------------------------------------------------------------------------

    !> Histogram of 1D data (one row of size(data)/channels pixels). See context_histogram_2d.
    function context_histogram_1d(self, data, hist, channels, lower, upper, saturate, unsigned, uncounted, &
                                  errmsg) result(status)
        class(gpk_context), intent(inout) :: self
        class(*), intent(in), target, contiguous :: data(:)
        integer(int64), intent(inout), contiguous :: hist(:)
        integer, intent(in), optional :: channels
        real(real64), intent(in), optional :: lower, upper
        integer(int64), intent(in), optional :: saturate
        logical, intent(in), optional :: unsigned
        integer(int64), intent(inout), contiguous, optional :: uncounted(:)
        character(:), allocatable, intent(out), optional :: errmsg
        integer :: status
        class(*), pointer :: rows(:, :)
        character(:), allocatable :: message

        rows(1:size(data), 1:1) => data
        status = self%context_histogram_2d(rows, hist, channels=channels, lower=lower, upper=upper, &
                                           saturate=saturate, unsigned=unsigned, uncounted=uncounted, &
                                           errmsg=message)
        if (present(errmsg)) errmsg = message
    end function

    !> Counts data(W*C, H) into bins = size(hist)/channels bins per channel over [lower, upper)
    !> (default [0, bins): integer sample v goes to bin v). hist is channel-major and overwritten.
    !> width: pixels per row when rows are padded (default size(data, 1)/channels); the padding is not
    !> counted. saturate clamps the counts (0 = none). uncounted(channels) receives the samples
    !> outside the range (and NaNs).
    function context_histogram_2d(self, data, hist, channels, width, lower, upper, saturate, unsigned, &
                                  uncounted, errmsg) result(status)
        class(gpk_context), intent(inout) :: self
        class(*), intent(in), target, contiguous :: data(:, :)
        integer(int64), intent(inout), contiguous :: hist(:)
        integer, intent(in), optional :: channels, width
        real(real64), intent(in), optional :: lower, upper
        integer(int64), intent(in), optional :: saturate
        logical, intent(in), optional :: unsigned
        integer(int64), intent(inout), contiguous, optional :: uncounted(:)
        character(:), allocatable, intent(out), optional :: errmsg
        integer :: status
        type(c_histogram_params) :: params
        type(c_ptr) :: address
        character(:), allocatable :: message

        allocate (character(0) :: message)
        status = c_histogram_params_init(params, c_sizeof(params))
        call locate_samples(data, unsigned, address, params%dtype)
        if (params%dtype == DTYPE_NONE) status = invalid('data must be integer(int8), integer(int16), '// &
                                                         'integer(int32), real(real32) or real(real64)', message)
        if (status == GPK_OK) status = histogram_shape(params, data, size(hist), channels, width, message)
        if (status == GPK_OK) status = histogram_options(params, lower, upper, saturate, message)
        if (status == GPK_OK .and. present(uncounted)) then
            if (size(uncounted) /= params%channels) &
                status = invalid('uncounted has '//str(size(uncounted, kind=int64))//' elements; there are '// &
                                 str(int(params%channels, int64))//' channels', message)
        end if
        if (status == GPK_OK) then
            status = c_histogram(self%handle, params, address, hist, uncounted)
            call settle(status, self%handle, message)
        end if
        if (present(errmsg)) errmsg = message
    end function

    !> Fills the sizes of a histogram from the arrays: channels, bins, width, height and stride.
    function histogram_shape(params, data, hist_size, channels, width, message) result(status)
        type(c_histogram_params), intent(inout) :: params
        class(*), intent(in) :: data(:, :)
        integer, intent(in) :: hist_size
        integer, intent(in), optional :: channels, width
        character(:), allocatable, intent(inout) :: message
        integer :: status, nchannels, pitch

        status = GPK_OK
        nchannels = 1
        if (present(channels)) nchannels = channels
        pitch = size(data, 1)
        if (nchannels < 1 .or. nchannels > 4) then
            status = invalid('channels is '//str(int(nchannels, int64))//'; it must be 1, 2, 3 or 4', message)
        else if (hist_size == 0 .or. mod(hist_size, nchannels) /= 0) then
            status = invalid('hist has '//str(int(hist_size, int64))//' elements; it must hold bins * '// &
                             str(int(nchannels, int64))//' channels, bins >= 1', message)
        else
            status = row_width(pitch, nchannels, width, 'data', params%width, message)
        end if
        params%channels = int(nchannels, c_int)
        params%bins = int(hist_size/max(nchannels, 1), c_size_t)
        params%height = size(data, 2, c_size_t)
        params%stride = int(pitch, c_size_t)*int(storage_size(data)/8, c_size_t)
    end function

    !> The range (default [0, bins)) and the saturation of a histogram.
    function histogram_options(params, lower, upper, saturate, message) result(status)
        type(c_histogram_params), intent(inout) :: params
        real(real64), intent(in), optional :: lower, upper
        integer(int64), intent(in), optional :: saturate
        character(:), allocatable, intent(inout) :: message
        integer :: status

        status = GPK_OK
        params%lower = 0
        params%upper = real(params%bins, real64)
        if (present(lower)) params%lower = lower
        if (present(upper)) params%upper = upper
        if (present(saturate)) then
            if (saturate < 0) then
                status = invalid('saturate is '//str(saturate)//'; it must be >= 0', message)
            else
                params%saturate = saturate
            end if
        end if
    end function

    !> The pixels per row of an array whose first dimension holds `pitch` samples of `channels`
    !> interleaved channels: `width` if given (it must fit), else pitch/channels (it must divide).
    function row_width(pitch, channels, width, name, pixels, message) result(status)
        integer, intent(in) :: pitch, channels
        integer, intent(in), optional :: width
        character(*), intent(in) :: name
        integer(c_size_t), intent(out) :: pixels
        character(:), allocatable, intent(inout) :: message
        integer :: status

        status = GPK_OK
        pixels = int(pitch/channels, c_size_t)
        if (present(width)) then
            pixels = int(max(width, 0), c_size_t)
            if (width < 1 .or. int(width, int64)*channels > pitch) &
                status = invalid('width is '//str(int(width, int64))//'; '//str(int(channels, int64))// &
                                 ' channels of it must fit in the '//str(int(pitch, int64))// &
                                 ' samples of a row of '//name, message)
        else if (mod(pitch, channels) /= 0) then
            status = invalid(name//' has '//str(int(pitch, int64))//' samples per row, not a multiple of '// &
                             str(int(channels, int64))//' channels', message)
        end if
    end function

    !> The address and gpk dtype of an array of samples; DTYPE_NONE for a type gpk does not take.
    subroutine locate_samples(array, unsigned, address, dtype)
        class(*), intent(in), target, contiguous :: array(:, :)
        logical, intent(in), optional :: unsigned
        type(c_ptr), intent(out) :: address
        integer(c_int), intent(out) :: dtype

        address = c_null_ptr
        dtype = DTYPE_NONE
        select type (samples => array)
        type is (integer(int8))
            address = c_loc(samples)
            dtype = DTYPE_U8
        type is (integer(int16))
            address = c_loc(samples)
            dtype = DTYPE_U16
        type is (integer(int32))
            address = c_loc(samples)
            dtype = DTYPE_I32
            if (present(unsigned)) then
                if (unsigned) dtype = DTYPE_U32
            end if
        type is (real(real32))
            address = c_loc(samples)
            dtype = DTYPE_F32
        type is (real(real64))
            address = c_loc(samples)
            dtype = DTYPE_F64
        end select
    end subroutine

    ! ------------------------------------------------------------------------------------------
    ! Convolution
    ! ------------------------------------------------------------------------------------------

    !> Correlates input(W*C, H) with the filter into output of the same shape (its kind may differ).
    !> Kinds: integer(int8) (u8), integer(int16) (u16), real(real32), real(real64). channels defaults
    !> to 1; border to GPK_BORDER_CLAMP, normalize to GPK_NORMALIZE_NONE, accumulate to
    !> GPK_ACCUMULATE_AUTO.
    function context_convolve(self, filter, input, output, channels, border, normalize, accumulate, errmsg) &
        result(status)
        class(gpk_context), intent(inout) :: self
        type(gpk_filter), intent(in) :: filter
        class(*), intent(in), target, contiguous :: input(:, :)
        class(*), intent(inout), target, contiguous :: output(:, :)
        integer, intent(in), optional :: channels, border, normalize, accumulate
        character(:), allocatable, intent(out), optional :: errmsg
        integer :: status
        type(c_convolve_params) :: params
        type(c_image) :: in_image, out_image
        type(c_ptr) :: in_address, out_address
        character(:), allocatable :: message

        allocate (character(0) :: message)
        status = GPK_OK
        if (any(shape(output) /= shape(input))) status = invalid('output has shape '//shape_str(shape(output))// &
                                                                 '; input has '//shape_str(shape(input)), message)
        if (status == GPK_OK) status = describe_image(input, channels, 'input', in_image, in_address, message)
        if (status == GPK_OK) status = describe_image(output, channels, 'output', out_image, out_address, message)
        if (status == GPK_OK) then
            status = c_convolve_params_init(params, c_sizeof(params))
            params%filter = filter%handle
            if (present(border)) params%border = int(border, c_int)
            if (present(normalize)) params%normalize = int(normalize, c_int)
            if (present(accumulate)) params%accumulate = int(accumulate, c_int)
            status = c_convolve(self%handle, params, in_image, in_address, out_image, out_address)
            call settle(status, self%handle, message)
        end if
        if (present(errmsg)) errmsg = message
    end function

    !> The C description of an image array img(W*C, H) and its address.
    function describe_image(array, channels, name, image, address, message) result(status)
        class(*), intent(in), target, contiguous :: array(:, :)
        integer, intent(in), optional :: channels
        character(*), intent(in) :: name
        type(c_image), intent(out) :: image
        type(c_ptr), intent(out) :: address
        character(:), allocatable, intent(inout) :: message
        integer :: status, nchannels

        nchannels = 1
        if (present(channels)) nchannels = channels
        image%struct_size = c_sizeof(image)
        image%height = size(array, 2, c_size_t)
        image%channels = int(nchannels, c_int)
        image%stride = 0
        call locate_samples(array, .false., address, image%dtype)
        if (nchannels < 1 .or. nchannels > 4) then
            status = invalid('channels is '//str(int(nchannels, int64))//'; it must be 1, 2, 3 or 4', message)
        else if (image%dtype == DTYPE_NONE .or. image%dtype == DTYPE_I32) then
            status = invalid(name//' must be integer(int8), integer(int16), real(real32) or real(real64)', message)
        else
            status = row_width(size(array, 1), nchannels, name=name, pixels=image%width, message=message)
        end if
    end function

    ! ------------------------------------------------------------------------------------------
    ! Filters
    ! ------------------------------------------------------------------------------------------

    !> Creates a named filter: identity, lp3, lp5, log9, smooth5, box:K, gauss:SIGMA.
    function filter_create_named(self, name, errmsg) result(status)
        class(gpk_filter), intent(inout) :: self
        character(*), intent(in) :: name
        character(:), allocatable, intent(out), optional :: errmsg
        integer :: status
        character(:), allocatable :: message

        allocate (character(0) :: message)
        call self%destroy()
        status = c_filter_create_named(self%handle, trim(name)//c_null_char)
        call settle(status, c_null_ptr, message)
        if (present(errmsg)) errmsg = message
    end function

    !> Creates a 2D filter from taps(kw, kh): taps(:, a) is row a of the kernel (see the layout note).
    function filter_create_2d(self, taps, errmsg) result(status)
        class(gpk_filter), intent(inout) :: self
        real(c_double), intent(in), contiguous :: taps(:, :)
        character(:), allocatable, intent(out), optional :: errmsg
        integer :: status
        character(:), allocatable :: message

        allocate (character(0) :: message)
        call self%destroy()
        if (size(taps) == 0) then
            status = invalid('taps has shape '//shape_str(shape(taps))//'; it must not be empty', message)
        else
            status = c_filter_create_2d(self%handle, size(taps, 2, c_size_t), size(taps, 1, c_size_t), taps)
            call settle(status, c_null_ptr, message)
        end if
        if (present(errmsg)) errmsg = message
    end function

    !> Creates a separable filter: `row` along x, then `col` along y.
    function filter_create_separable(self, row, col, errmsg) result(status)
        class(gpk_filter), intent(inout) :: self
        real(c_double), intent(in), contiguous :: row(:), col(:)
        character(:), allocatable, intent(out), optional :: errmsg
        integer :: status
        character(:), allocatable :: message

        allocate (character(0) :: message)
        call self%destroy()
        if (size(row) == 0 .or. size(col) == 0) then
            status = invalid('row and col must not be empty', message)
        else
            status = c_filter_create_separable(self%handle, size(row, kind=c_size_t), row, size(col, kind=c_size_t), &
                                               col)
            call settle(status, c_null_ptr, message)
        end if
        if (present(errmsg)) errmsg = message
    end function

    subroutine filter_destroy(self)
        class(gpk_filter), intent(inout) :: self
        call c_filter_destroy(self%handle)
        self%handle = c_null_ptr
    end subroutine

    impure elemental subroutine filter_finalize(self)
        type(gpk_filter), intent(inout) :: self
        call self%destroy()
    end subroutine

    logical function filter_is_created(self)
        class(gpk_filter), intent(in) :: self
        filter_is_created = c_associated(self%handle)
    end function

    !> The filter's shape; status GPK_ERR_INVALID_ARGUMENT for a filter not created.
    function filter_shape(self, info, errmsg) result(status)
        class(gpk_filter), intent(in) :: self
        type(gpk_filter_shape), intent(out) :: info
        character(:), allocatable, intent(out), optional :: errmsg
        integer :: status
        type(c_filter_info) :: c_info
        character(:), allocatable :: message

        allocate (character(0) :: message)
        c_info%struct_size = c_sizeof(c_info)
        status = c_filter_get_info(c_info, self%handle)
        call settle(status, c_null_ptr, message)
        if (status == GPK_OK) then
            info%separable = c_info%separable /= 0
            info%kh = int(c_info%kh)
            info%kw = int(c_info%kw)
            info%sum = c_info%sum
            info%integer_taps = c_info%integer_taps /= 0
        end if
        if (present(errmsg)) errmsg = message
    end function

    !> The taps: kh*kw values of a 2D filter (row after row), or the row taps then the column taps.
    function filter_taps(self, taps, errmsg) result(status)
        class(gpk_filter), intent(in) :: self
        real(c_double), allocatable, intent(out) :: taps(:)
        character(:), allocatable, intent(out), optional :: errmsg
        integer :: status
        type(gpk_filter_shape) :: info
        character(:), allocatable :: message

        allocate (character(0) :: message)
        status = self%shape(info)
        call settle(status, c_null_ptr, message) ! shape's failure left its message in the thread's slot
        if (status == GPK_OK) then
            if (info%separable) then
                allocate (taps(info%kw + info%kh))
            else
                allocate (taps(info%kw*info%kh))
            end if
            status = c_filter_get_taps(taps, size(taps, kind=c_size_t), self%handle)
            call settle(status, c_null_ptr, message)
        else
            allocate (taps(0))
        end if
        if (present(errmsg)) errmsg = message
    end function

    !> Filters are immutable, so assignment builds an independent copy from the taps.
    subroutine filter_assign(lhs, rhs)
        class(gpk_filter), intent(inout) :: lhs
        class(gpk_filter), intent(in) :: rhs
        type(gpk_filter_shape) :: info
        real(c_double), allocatable :: taps(:)
        integer :: status

        if (c_associated(lhs%handle, rhs%handle)) return
        call lhs%destroy()
        if (.not. rhs%is_created()) return
        status = rhs%taps(taps)
        if (status == GPK_OK) status = rhs%shape(info)
        if (status /= GPK_OK) return
        if (info%separable) then
            status = c_filter_create_separable(lhs%handle, int(info%kw, c_size_t), taps(1:info%kw), &
                                               int(info%kh, c_size_t), taps(info%kw + 1:))
        else
            status = c_filter_create_2d(lhs%handle, int(info%kh, c_size_t), int(info%kw, c_size_t), taps)
        end if
    end subroutine

end module gpk
