!> Misuse through the Fortran binding returns a status and a message, leaves outputs alone, and never
!> stops the program: wrong shapes and kinds, bad parameters, handles that were never created.
program test_misuse
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: int8, int16, int32, int64, real32, real64
    use, intrinsic :: ieee_arithmetic, only: ieee_value, ieee_positive_inf
    use gpk
    use checks
    implicit none

    call test_handles()
    call test_heat_misuse()
    call test_histogram_misuse()
    call test_convolve_misuse()
    call test_filter_misuse()
    call finish('fortran misuse')

contains

    subroutine test_handles()
        type(gpk_context) :: empty, ctx, other
        type(gpk_filter) :: filter
        real(c_double) :: grid(3, 2), cond(3, 2)
        integer(int64) :: hist(4)
        integer(int8) :: image(4, 4), out(4, 4)

        grid = 1
        cond = 0.5_c_double
        image = 1
        call check(.not. empty%is_created(), 'a new context is empty')
        call check(empty%backend() == GPK_BACKEND_AUTO, 'an empty context has no backend')
        call check_invalid(empty%heat(grid, cond, errmsg=msg), 'ctx', 'heat on an empty context')
        call check_invalid(empty%histogram(image, hist, errmsg=msg), 'ctx', 'histogram on an empty context')
        call check_invalid(ctx%create(backend=7, errmsg=msg), 'backend', 'an unknown backend')
        call check(.not. ctx%is_created(), 'a failed create leaves the context empty')
        call check_invalid(ctx%create(threads=-1, errmsg=msg), 'threads', 'negative threads')
        call check_ok(ctx%create(backend=GPK_BACKEND_CPU, errmsg=msg), 'create')
        call check(ctx%backend() == GPK_BACKEND_CPU, 'the CPU backend was chosen')
        call check_invalid(ctx%convolve(filter, image, out, errmsg=msg), 'filter', &
                           'convolve with a filter never created')

        other = ctx ! contexts are not copied: the target is left empty, the source keeps its context
        call check(.not. other%is_created() .and. ctx%is_created(), 'assigning a context does not copy it')
        call ctx%destroy()
        call ctx%destroy()
        call check(.not. ctx%is_created(), 'destroy twice is harmless')
        call check(gpk_status_message(GPK_ERR_INVALID_ARGUMENT) == 'invalid argument', 'status message')
        call check(len(gpk_version()) >= 5, 'version '//gpk_version())
    end subroutine

    subroutine test_heat_misuse()
        type(gpk_context) :: ctx
        real(c_double) :: grid(4, 3), cond(4, 3), small(3, 4), tfinal(4, 3)
        type(gpk_heat_report), allocatable :: history(:)

        grid = 20
        cond = 0.5_c_double
        small = 0
        tfinal = -7
        call check_ok(ctx%create(errmsg=msg), 'create')
        call check_invalid(ctx%heat(grid, small, errmsg=msg), 'conductivity', 'transposed conductivity')
        call check_invalid(ctx%heat(grid, cond, small, errmsg=msg), 'tfinal', 'wrong tfinal shape')
        call check_invalid(ctx%heat(grid, cond, tfinal, maxiter=0, errmsg=msg), 'maxiter', 'maxiter 0')
        call check_invalid(ctx%heat(grid, cond, tfinal, maxiter=-3, errmsg=msg), 'maxiter', 'maxiter < 0')
        call check_invalid(ctx%heat(grid, cond, tfinal, period=-1, errmsg=msg), 'period', 'period < 0')
        call check_invalid(ctx%heat(grid, cond, tfinal, threshold=-1.0_c_double, errmsg=msg), 'threshold', &
                           'negative threshold')
        cond(2, 3) = 1.5_c_double
        call check_invalid(ctx%heat(grid, cond, tfinal, history=history, errmsg=msg), 'conductivity', &
                           'conductivity above 1')
        call check(allocated(history), 'history is allocated on failure')
        if (allocated(history)) call check(size(history) == 0, 'history is empty on failure')
        cond(2, 3) = 0.5_c_double
        grid(1, 1) = ieee_value(grid(1, 1), ieee_positive_inf)
        call check_invalid(ctx%heat(grid, cond, tfinal, errmsg=msg), 'tinit', 'infinite temperature')
        call check(all(tfinal == -7), 'tfinal untouched by rejected runs')
    end subroutine

    subroutine test_histogram_misuse()
        type(gpk_context) :: ctx
        integer(int8) :: bytes(12, 2)
        integer(int32) :: ids(10)
        complex(real64) :: waves(4)
        logical :: flags(4, 2)
        integer(int64) :: hist(256), odd(7), uncounted(2)

        bytes = 3
        ids = 1
        waves = (0, 0)
        flags = .true.
        hist = -1
        call check_ok(ctx%create(errmsg=msg), 'create')
        call check_invalid(ctx%histogram(waves, hist, errmsg=msg), 'data', 'complex data')
        call check_invalid(ctx%histogram(flags, hist, errmsg=msg), 'data', 'logical data')
        call check_invalid(ctx%histogram(bytes, hist, channels=5, errmsg=msg), 'channels', '5 channels')
        call check_invalid(ctx%histogram(bytes, hist, channels=0, errmsg=msg), 'channels', '0 channels')
        call check_invalid(ctx%histogram(bytes, odd, channels=2, errmsg=msg), 'hist', 'hist not bins*channels')
        call check_invalid(ctx%histogram(bytes, hist(1:0), errmsg=msg), 'hist', 'no bins')
        call check_invalid(ctx%histogram(bytes, hist(1:10), channels=5, errmsg=msg), 'channels', &
                           'channels checked before bins')
        call check_invalid(ctx%histogram(bytes(1:10, :), hist(1:12), channels=4, errmsg=msg), 'multiple', &
                           'a row that is not whole pixels')
        call check_invalid(ctx%histogram(bytes, hist, width=13, errmsg=msg), 'width', 'width beyond the pitch')
        call check_invalid(ctx%histogram(bytes, hist, width=0, errmsg=msg), 'width', 'width 0')
        call check_invalid(ctx%histogram(bytes, hist(1:16), channels=2, uncounted=uncounted(1:1), errmsg=msg), &
                           'uncounted', 'uncounted of the wrong size')
        call check_invalid(ctx%histogram(ids, hist, lower=5.0_real64, upper=5.0_real64, errmsg=msg), 'upper', &
                           'empty range')
        call check_invalid(ctx%histogram(ids, hist, saturate=-1_int64, errmsg=msg), 'saturate', &
                           'negative saturate')
        call check(all(hist == -1), 'hist untouched by rejected calls')
    end subroutine

    subroutine test_convolve_misuse()
        type(gpk_context) :: ctx
        type(gpk_filter) :: lp3
        integer(int8) :: image(6, 4), out(6, 4), tall(4, 6)
        integer(int32) :: ints(6, 4)
        real(real32) :: wide(7, 4)

        image = 9
        out = 0
        ints = 0
        wide = 0
        call check_ok(ctx%create(errmsg=msg), 'create')
        call check_ok(lp3%create_named('lp3', msg), 'lp3')
        call check_invalid(ctx%convolve(lp3, image, tall, errmsg=msg), 'shape', 'transposed output')
        call check_invalid(ctx%convolve(lp3, image, ints, errmsg=msg), 'output', 'i32 output')
        call check_invalid(ctx%convolve(lp3, ints, image, errmsg=msg), 'input', 'i32 input')
        call check_invalid(ctx%convolve(lp3, wide, wide, channels=3, errmsg=msg), 'multiple', &
                           'rows that are not whole pixels')
        call check_invalid(ctx%convolve(lp3, image, out, channels=9, errmsg=msg), 'channels', '9 channels')
        call check_invalid(ctx%convolve(lp3, image, out, border=17, errmsg=msg), 'border', 'unknown border')
        call check_invalid(ctx%convolve(lp3, image, out, normalize=-1, errmsg=msg), 'normalize', &
                           'unknown normalisation')
        call check_invalid(ctx%convolve(lp3, image, out, normalize=GPK_NORMALIZE_SUM, errmsg=msg), 'sum', &
                           'sum normalisation of taps summing to 0')
        call check(all(out == 0), 'out untouched by rejected calls')
    end subroutine

    subroutine test_filter_misuse()
        type(gpk_filter) :: filter
        type(gpk_filter_shape) :: info
        real(c_double) :: even(4, 3), row(3), empty(0)
        real(c_double), allocatable :: taps(:)

        even = 1
        row = 1
        call check_invalid(filter%create_named('nope', msg), 'nope', 'unknown filter name')
        call check_invalid(filter%create_named('box:4', msg), 'box:4', 'even box')
        call check_invalid(filter%create_named('gauss:-1', msg), 'SIGMA', 'negative sigma')
        call check_invalid(filter%create_2d(even, msg), 'kw', 'even kernel width')
        call check_invalid(filter%create_separable(row, empty, msg), 'empty', 'empty column filter')
        call check(.not. filter%is_created(), 'failed creates leave the filter empty')
        call check_invalid(filter%shape(info, msg), 'filter', 'shape of a filter never created')
        call check_invalid(filter%taps(taps, msg), 'filter', 'taps of a filter never created')
        call check_ok(filter%create_separable(row, row, msg), 'separable')
        call check(filter%shape(info) == GPK_OK, 'separable shape')
        call check(info%separable .and. info%kh == 3 .and. info%kw == 3 .and. info%sum == 9, 'separable 3x3 ones')
    end subroutine

end program test_misuse
