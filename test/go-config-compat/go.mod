module harvester-machine/test/go-config-compat

go 1.22
