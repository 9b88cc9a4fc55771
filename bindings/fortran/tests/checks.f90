!> A minimal harness for the Fortran binding tests, like tests/common/check.hpp: check() records
!> failures, finish() prints the tally and ends the program (exit status 0 pass, 1 fail).
!> Tests pass `msg` as the errmsg of the call under test; check_ok and check_invalid read it afterwards
!> (a statement must not both set msg through a function and read it).
module checks
    implicit none
    private
    public :: check, check_ok, check_invalid, finish

    character(:), allocatable, public :: msg
    integer :: total = 0, failed = 0

contains

    subroutine check(ok, what)
        logical, intent(in) :: ok
        character(*), intent(in) :: what

        total = total + 1
        if (ok) return
        failed = failed + 1
        write (*, '(a, a)') 'CHECK failed: ', what
    end subroutine

    !> status is 0 (GPK_OK); otherwise shows msg.
    subroutine check_ok(status, what)
        integer, intent(in) :: status
        character(*), intent(in) :: what

        if (status == 0) then
            call check(.true., what)
        else if (allocated(msg)) then
            call check(.false., what//': status '//itoa(status)//': '//msg)
        else
            call check(.false., what//': status '//itoa(status))
        end if
    end subroutine

    !> status is 1 (GPK_ERR_INVALID_ARGUMENT) and msg contains `word`.
    subroutine check_invalid(status, word, what)
        integer, intent(in) :: status
        character(*), intent(in) :: word, what

        call check(status == 1, what//': status '//itoa(status)//', expected invalid argument')
        if (.not. allocated(msg)) then
            call check(.false., what//': no message')
        else
            call check(index(msg, word) > 0, what//': message "'//msg//'" names '//word)
        end if
    end subroutine

    function itoa(value) result(s)
        integer, intent(in) :: value
        character(:), allocatable :: s
        character(12) :: buffer

        write (buffer, '(i0)') value
        s = trim(buffer)
    end function

    subroutine finish(name)
        character(*), intent(in) :: name

        write (*, '(a, a, i0, a, i0, a)') name, ': ', total, ' checks, ', failed, ' failed'
        if (failed > 0) error stop 1
    end subroutine

end module checks
