! piotwin's Fortran units: the few Fortran I/O statements piotwin's Fortran API
! (`Api::Fortran`) makes, callable from Rust. Each routine is one Fortran statement
! (a data-transfer routine: one statement per record) with IOSTAT and IOMSG, so the
! Fortran runtime does for piotwin what it does for a Fortran program: BTIO's
! `fortran` and `epio` subtypes pay the same runtime as NPB's.
!
! The I/O lists are written as the Fortran programs piotwin mirrors write theirs:
! a direct-access record item by item (NPB `fortran`'s five `u(m, …)`: an implied-do
! built with -fno-frontend-optimize stays one transfer per item), a sequential
! record as one array (NPB `epio`'s nested implied-do, which gfortran turns into one
! array transfer).
!
! Plain external procedures, not a module: no .mod file is written at build time.
! Messages go back NUL-terminated in a 256-character buffer the caller owns.

subroutine piotwin_f_message(text, msg)
  use iso_c_binding, only: c_char, c_null_char
  implicit none
  character(len=*), intent(in) :: text
  character(kind=c_char), intent(out) :: msg(256)
  integer :: i, n
  n = min(len_trim(text), 255)
  do i = 1, n
    msg(i) = text(i:i)
  end do
  msg(n + 1) = c_null_char
end subroutine piotwin_f_message

! OPEN(NEWUNIT=, FORM='UNFORMATTED'): direct access with RECL=recl bytes, or
! sequential (positioned at the start). action 0: write, 1: read and write (both
! create a missing file, neither truncates), 2: read an existing file.
subroutine piotwin_f_open(path, path_len, direct, recl, action, unit, fd, ios, msg) &
    bind(C, name="piotwin_f_open")
  use iso_c_binding, only: c_char, c_int
  implicit none
  integer(c_int), value :: path_len, direct, recl, action
  character(kind=c_char), intent(in) :: path(path_len)
  integer(c_int), intent(out) :: unit, fd, ios
  character(kind=c_char), intent(out) :: msg(256)
  character(len=path_len) :: name
  character(len=256) :: m
  character(len=9) :: act, stat
  integer :: i, u
  do i = 1, path_len
    name(i:i) = path(i)
  end do
  select case (action)
  case (0)
    act = 'write'
    stat = 'unknown'
  case (1)
    act = 'readwrite'
    stat = 'unknown'
  case default
    act = 'read'
    stat = 'old'
  end select
  m = ''
  u = -1
  if (direct /= 0) then
    open(newunit=u, file=name, form='unformatted', access='direct', recl=recl, &
         status=stat, action=act, iostat=ios, iomsg=m)
  else
    open(newunit=u, file=name, form='unformatted', access='sequential', &
         position='rewind', status=stat, action=act, iostat=ios, iomsg=m)
  end if
  unit = u
  fd = -1
  if (ios == 0) fd = fnum(u)
  call piotwin_f_message(m, msg)
end subroutine piotwin_f_open

! nrec WRITE(REC=) statements (write /= 0) or READ(REC=) statements, records rec0
! onwards, each with k reals.
subroutine piotwin_f_direct(unit, write, rec0, nrec, k, buf, ios, msg) &
    bind(C, name="piotwin_f_direct")
  use iso_c_binding, only: c_char, c_int, c_int64_t, c_double
  implicit none
  integer(c_int), value :: unit, write, k
  integer(c_int64_t), value :: rec0, nrec
  real(c_double), intent(inout) :: buf(k, nrec)
  integer(c_int), intent(out) :: ios
  character(kind=c_char), intent(out) :: msg(256)
  character(len=256) :: m
  integer(c_int64_t) :: r
  integer :: j
  m = ''
  ios = 0
  do r = 1, nrec
    if (write /= 0) then
      write(unit, rec=rec0 + r - 1, iostat=ios, iomsg=m) (buf(j, r), j = 1, k)
    else
      read(unit, rec=rec0 + r - 1, iostat=ios, iomsg=m) (buf(j, r), j = 1, k)
    end if
    if (ios /= 0) exit
  end do
  call piotwin_f_message(m, msg)
end subroutine piotwin_f_direct

! One sequential WRITE statement of a record of n reals (write /= 0), or one READ
! of the next record's first n reals.
subroutine piotwin_f_sequential(unit, write, n, buf, ios, msg) &
    bind(C, name="piotwin_f_sequential")
  use iso_c_binding, only: c_char, c_int, c_int64_t, c_double
  implicit none
  integer(c_int), value :: unit, write
  integer(c_int64_t), value :: n
  real(c_double), intent(inout) :: buf(n)
  integer(c_int), intent(out) :: ios
  character(kind=c_char), intent(out) :: msg(256)
  character(len=256) :: m
  m = ''
  if (write /= 0) then
    write(unit, iostat=ios, iomsg=m) buf
  else
    read(unit, iostat=ios, iomsg=m) buf
  end if
  call piotwin_f_message(m, msg)
end subroutine piotwin_f_sequential

! FLUSH (close = 0: the runtime's buffer to the OS, not to storage: fsync the
! descriptor for that) or CLOSE (the buffer written out, the unit closed).
subroutine piotwin_f_flush_or_close(unit, close_it, ios, msg) &
    bind(C, name="piotwin_f_flush_or_close")
  use iso_c_binding, only: c_char, c_int
  implicit none
  integer(c_int), value :: unit, close_it
  integer(c_int), intent(out) :: ios
  character(kind=c_char), intent(out) :: msg(256)
  character(len=256) :: m
  m = ''
  if (close_it /= 0) then
    close(unit, iostat=ios, iomsg=m)
  else
    flush(unit, iostat=ios, iomsg=m)
  end if
  call piotwin_f_message(m, msg)
end subroutine piotwin_f_flush_or_close
