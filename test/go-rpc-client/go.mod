module harvester-machine/test/go-rpc-client

go 1.22
