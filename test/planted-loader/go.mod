module harvester-machine/test/planted-loader

go 1.22
