module harvester-machine/test/go-cloudinit-merge

go 1.22

require (
	dario.cat/mergo v1.0.2
	github.com/ghodss/yaml v1.0.0
)

require gopkg.in/yaml.v2 v2.4.0 // indirect
