#!/usr/bin/env node
// harvester-machine: the operator CLI (see program.ts) under Node; the single executable
// runs the same function from src/bin/harvester-machine.ts.
import { runCliProcess } from './process-main.js';

void runCliProcess();
