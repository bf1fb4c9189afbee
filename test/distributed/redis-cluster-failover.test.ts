/**
 * A master of the Redis Cluster killed with SIGKILL during a stream of settlements (issue 36):
 * fast 503s or accepted writes, no hang, every accepted receipt stored, no settled payment
 * without its receipt (test/distributed/cluster-deployment.ts).
 */
import { clusterDeploymentSuite } from "./cluster-deployment.js";

clusterDeploymentSuite("failover");
