package main

// memfd_create(2)'s number on linux/amd64 (package syscall predates it).
const sysMemfdCreate = 319
