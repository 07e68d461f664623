module harvester-machine/launcher

go 1.25

require github.com/klauspost/compress v1.20.4
